package arcmemo

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// nestedEvents is n lines of events.jsonl, each a payload of about 512 KB
// of nested empty arrays.
func nestedEvents(n int) []byte {
	line := `{"ts_utc":"2026-01-01T00:00:00Z","message":"heartbeat","payload":{"a":[` +
		strings.Repeat("[[[[]]]],", 512<<10/9) + `[]]}}` + "\n"
	return bytes.Repeat([]byte(line), n)
}

// allocated is the bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestEventsDoNotAmplify (issue 24.9): 90 MB of nested empty arrays in
// events.jsonl took 1.5 GB, because payloads were decoded into
// map[string]any (about 17 bytes per byte). Read line by line with raw
// payloads, 8 MB of them cost a small multiple of their size.
func TestEventsDoNotAmplify(t *testing.T) {
	dir := copyDir(t, filepath.Join(corpusDir(t), "mem2-mock-run"))
	base := allocated(func() {
		if _, err := ReadRun(dir); err != nil {
			t.Fatal(err)
		}
	})
	events := filepath.Join(dir, "events.jsonl")
	orig, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	hostile := nestedEvents(16)
	if err := os.WriteFile(events, append(append([]byte(nil), orig...), hostile...), 0o644); err != nil {
		t.Fatal(err)
	}
	var run *Run
	got := allocated(func() {
		if run, err = ReadRun(dir); err != nil {
			t.Fatal(err)
		}
	})
	if run.Started.IsZero() || run.Finished.IsZero() {
		t.Fatalf("the real events were lost: %+v", run)
	}
	extra := int64(got) - int64(base)
	if limit := 4 * int64(len(hostile)); extra > limit {
		t.Fatalf("%d bytes of events cost %d bytes of allocation (limit %d)", len(hostile), extra, limit)
	}
	t.Logf("%d bytes of nested arrays: %d bytes allocated beyond the plain run", len(hostile), extra)
}

// TestEventsBadInput: what events.jsonl may not hold.
func TestEventsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string
	}{
		{"torn line", `{"ts_utc":"x","message":"run started"}` + "\n" + `{"ts_utc":`, "line 2 is not a JSON object"},
		{"over the line limit", `{"message":"` + strings.Repeat("x", MaxEventLine) + `"}` + "\n", "line 1 is longer than 1048576 bytes"},
		{"not an object", "[1]\n", "line 1 is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := scanEvents(strings.NewReader(tc.in), "events.jsonl", func(*mem2Event) {})
			if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzScanEvents: any bytes give events or a clean bad-input error, and
// every non-empty line of an accepted file is one event.
func FuzzScanEvents(f *testing.F) {
	seedFiles(f, false, "mem2-mock-run/events.jsonl", "mem2-mock-run-synthetic-replay/events.jsonl")
	f.Add([]byte(`{"ts_utc":"2026-01-01T00:00:00Z","message":"starting pass","payload":{"pass_idx":1}}` + "\n\n" + `{"payload":[[[]]]}`))
	f.Add([]byte(`{"message":"starting pass","payload":{"pass_idx":"x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		err := scanEvents(bytes.NewReader(b), "events.jsonl", func(*mem2Event) { n++ })
		if err != nil {
			cleanErr(t, err)
			return
		}
		lines := 0
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		if n != lines {
			t.Fatalf("%d events from %d lines", n, lines)
		}
	})
}
