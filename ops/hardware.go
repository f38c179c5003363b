package ops

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
)

// HardwareEnv overrides the accelerator model a run records (as --hardware
// does), for machines where it cannot be read or should be named otherwise.
const HardwareEnv = "MEMORYLAB_HARDWARE"

// procDir is where DetectHardware reads the NVIDIA driver's GPU list.
const procDir = "/proc"

// DetectHardware returns the host and the accelerator a run sees, read from
// the system without a shell: override (the --hardware flag), else
// $MEMORYLAB_HARDWARE, else the models in <proc>/driver/nvidia/gpus/*/information
// (in bus order) restricted to the indices in $CUDA_VISIBLE_DEVICES when it
// lists numbers ("-1" there: no GPU). Several models are joined with
// " + "; one model is named once however many cards carry it.
func DetectHardware(proc string, getenv func(string) string, override string) ledger.Hardware {
	host, _ := os.Hostname()
	h := ledger.Hardware{Host: clipHardware(host)}
	if override == "" {
		override = getenv(HardwareEnv)
	}
	if override != "" {
		h.Accelerator = clipHardware(override)
		return h
	}
	dirs, _ := filepath.Glob(filepath.Join(proc, "driver", "nvidia", "gpus", "*", "information"))
	sort.Strings(dirs)
	var models []string
	for _, p := range dirs {
		b, err := ledger.ReadRegularFile(p, p, "GPU information", "", 64<<10)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "Model" {
				models = append(models, strings.TrimSpace(v))
				break
			}
		}
	}
	if cvd := getenv("CUDA_VISIBLE_DEVICES"); cvd != "" {
		var picked []string
		for _, f := range strings.Split(cvd, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				picked = models // UUIDs or MIG names: keep every model
				break
			}
			if i < 0 {
				break // "-1": no device from here on (CUDA's rule)
			}
			if i < len(models) {
				picked = append(picked, models[i])
			}
		}
		models = picked
	}
	var uniq []string
	for _, m := range models {
		if m != "" && !contains(uniq, m) {
			uniq = append(uniq, m)
		}
	}
	h.Accelerator = clipHardware(strings.Join(uniq, " + "))
	return h
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func clipHardware(s string) string {
	s = strings.TrimSpace(display.Line(s))
	if len(s) > ledger.MaxHardwareText {
		s = strings.ToValidUTF8(s[:ledger.MaxHardwareText], "")
	}
	return s
}
