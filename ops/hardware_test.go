package ops

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDetectHardware(t *testing.T) {
	proc := t.TempDir()
	for bus, model := range map[string]string{"0000:17:00.0": "NVIDIA H100 80GB HBM3", "0000:65:00.0": "NVIDIA H100 80GB HBM3",
		"0000:b3:00.0": "NVIDIA GeForce RTX 4090"} {
		dir := filepath.Join(proc, "driver", "nvidia", "gpus", bus)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		info := "Model: \t\t " + model + "\nIRQ:   \t\t 150\nGPU UUID: \t GPU-1234\n"
		if err := os.WriteFile(filepath.Join(dir, "information"), []byte(info), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, proc, override string
		env                  map[string]string
		want                 string
	}{
		{"all cards", proc, "", nil, "NVIDIA H100 80GB HBM3 + NVIDIA GeForce RTX 4090"},
		{"visible devices", proc, "", map[string]string{"CUDA_VISIBLE_DEVICES": "2"}, "NVIDIA GeForce RTX 4090"},
		{"two of one model", proc, "", map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}, "NVIDIA H100 80GB HBM3"},
		{"none visible", proc, "", map[string]string{"CUDA_VISIBLE_DEVICES": "-1"}, ""},
		{"uuids keep all", proc, "", map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-1234"}, "NVIDIA H100 80GB HBM3 + NVIDIA GeForce RTX 4090"},
		{"env override", proc, "", map[string]string{"MEMORYLAB_HARDWARE": "TPU v5e"}, "TPU v5e"},
		{"flag wins", proc, "A100", map[string]string{"MEMORYLAB_HARDWARE": "TPU v5e"}, "A100"},
		{"no driver", t.TempDir(), "", nil, ""},
		{"control characters dropped", proc, "H100\x1b[31m\n", nil, "H100[31m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := DetectHardware(tc.proc, func(k string) string { return tc.env[k] }, tc.override)
			if h.Accelerator != tc.want {
				t.Fatalf("accelerator %q, want %q", h.Accelerator, tc.want)
			}
			if host, _ := os.Hostname(); h.Host != host {
				t.Fatalf("host %q, want %q", h.Host, host)
			}
		})
	}
}
