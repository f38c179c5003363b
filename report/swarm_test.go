package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// TestSwarmSection (issue 29.6): runs by host, each machine's last sync and
// the claims in flight, as markdown (golden file) and data; a lone machine
// that never synced gets no section.
func TestSwarmSection(t *testing.T) {
	rec := func(ts, host string, st string) ledger.Record {
		r := ledger.Record{Timestamp: ts, Status: st}
		if host != "" {
			r.Hardware = &ledger.Hardware{Host: host}
		}
		return r
	}
	recs := []ledger.Record{
		rec("2026-11-24T20:00:00Z", "gpu-a", ledger.StatusKeep),
		rec("2026-11-25T01:00:00Z", "gpu-a", ledger.StatusDiscard),
		rec("2026-11-25T01:05:00Z", "gpu-b", ledger.StatusKeep),
		rec("2026-11-25T01:10:00Z", "gpu-b", ledger.StatusDiscard),
		rec("2026-11-25T01:15:00Z", "gpu-b", ledger.StatusCrash),
		rec("2026-11-25T01:20:00Z", "", ledger.StatusDiscard),
	}
	window := "2026-11-25T00:00:00Z"
	syncs := []SwarmSync{{Machine: "gpu-b-0a1b2c3d", When: "2026-11-25T01:16:00Z"}, {Machine: "gpu-a-deadbeef", When: "2026-11-25T01:01:00Z"}}
	start := time.Date(2026, 11, 25, 1, 20, 0, 0, time.UTC)
	claims := []SwarmClaim{{Fingerprint: "f1", Description: "raise LR | to 0.06", Host: "gpu-a", Start: start, Expires: start.Add(10 * time.Minute)}}

	if sw := SwarmOf(recs[:2], window, nil, nil); sw != nil {
		t.Fatalf("a lone machine got a swarm section: %+v", sw)
	}
	sw := SwarmOf(recs, window, syncs, claims)
	if sw == nil || len(sw.Hosts) != 3 || sw.Hosts[0].Host != "gpu-b" || sw.Hosts[0].InWindow != 3 || sw.Hosts[0].Kept != 1 ||
		sw.Hosts[1].Host != "gpu-a" || sw.Hosts[1].Runs != 2 || sw.Hosts[1].InWindow != 1 {
		t.Fatalf("swarm: %+v", sw)
	}
	var b bytes.Buffer
	writeSwarm(&b, sw)
	golden := filepath.Join("testdata", "swarm.md")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("markdown differs from %s:\n%s", golden, b.String())
	}
	b.Reset()
	writeSwarm(&b, SwarmOf(recs, window, syncs, nil))
	if !bytes.Contains(b.Bytes(), []byte("No claims in flight.")) {
		t.Fatalf("no claims: %s", b.String())
	}
}
