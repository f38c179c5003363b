package ops

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"testing"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// checkZones: the zones cut base into consecutive stretches that start
// lines, each naming the least and greatest id of its lines.
func checkZones(t *testing.T, base []byte, zones []codeZone) {
	t.Helper()
	if len(base) == 0 {
		if len(zones) != 0 {
			t.Fatalf("zones of an empty base: %+v", zones)
		}
		return
	}
	if len(zones) == 0 || zones[0].start != 0 {
		t.Fatalf("zones do not start at 0: %+v", zones)
	}
	for i, z := range zones {
		end := len(base)
		if i+1 < len(zones) {
			end = zones[i+1].start
		}
		if z.start > 0 && base[z.start-1] != '\n' {
			t.Fatalf("zone %d starts inside a line (%d)", i, z.start)
		}
		want := zonesOf(base[:end], z.start, nil)
		if len(want) == 0 || want[0].empty != z.empty || want[0].min != z.min || want[0].max != z.max {
			t.Fatalf("zone %d (%d-%d): %+v, its lines give %+v", i, z.start, end, z, want)
		}
	}
}

// TestCodeZonesFindTheSameLines: with zones of any size, over a base whose
// ids are out of order, repeated and broken, a run's line and a window's
// lines are the ones a search of the whole base finds.
func TestCodeZonesFindTheSameLines(t *testing.T) {
	defer func(n int) { codeZoneBytes = n }(codeZoneBytes)
	rng := rand.New(rand.NewSource(1))
	var base []byte
	var ids []ledger.RunID
	for i := 0; i < 600; i++ {
		day := 20 + i/100
		if rng.Intn(20) == 0 { // a pulled run, from days before
			day = 10 + rng.Intn(10)
		}
		id := ledger.RunID(fmt.Sprintf("202611%02dT%06dZ-%04x", day, i, rng.Intn(1<<16)))
		if rng.Intn(15) == 0 && len(ids) > 0 { // a run with a second line
			id = ids[rng.Intn(len(ids))]
		}
		ids = append(ids, id)
		v := float64(i)
		base = append(base, (&RunCode{Run: id, Status: "keep", Value: &v, Code: change.Code{Change: "c"}}).line()...)
		if rng.Intn(40) == 0 {
			base = append(base, "no tab on this line\n"...)
		}
	}
	plain := &codeSet{base: base, tail: map[ledger.RunID]RunCode{}}
	for _, size := range []int{1, 100, 2000, 1 << 20} {
		codeZoneBytes = size
		zones := zonesOf(base, 0, nil)
		checkZones(t, base, zones)
		z := &codeSet{base: base, tail: map[ledger.RunID]RunCode{}, zones: zones}
		for _, id := range append(ids, "20261101T000000Z-none", "x", "20261130T000000Z-after") {
			if got, want := z.lineOf(id), plain.lineOf(id); got != want {
				t.Fatalf("zones of %d bytes: lineOf(%s) = %d, want %d", size, id, got, want)
			}
		}
		for _, w := range []map[ledger.RunID]bool{
			{ids[599]: true, ids[598]: true, ids[590]: true},
			{ids[599]: true, ids[10]: true},
			{ids[599]: true, "20261126T000000Z-none": true},
		} {
			for _, also := range []ledger.RunID{ids[0], ids[300], ids[597], "20261125T999999Z-none"} {
				want := (&codeSet{base: base, tail: map[ledger.RunID]RunCode{}}).windowOf(w, also)
				zs := &codeSet{base: base, tail: map[ledger.RunID]RunCode{}, zones: zones}
				if got := zs.windowOf(w, also); !reflect.DeepEqual(got, want) {
					t.Fatalf("zones of %d bytes: window %v, also %s:\n got %v\nwant %v", size, w, also, got, want)
				}
				if got, want := zs.lineOf(also), plain.lineOf(also); got != want {
					t.Fatalf("zones of %d bytes, after the window: lineOf(%s) = %d, want %d", size, also, got, want)
				}
			}
		}
	}
}

// TestCodeZonesSearchTheEnd: the window of a base in ledger order, and a
// champion of the last days, are searched for in its last zones only
// (issue 30: the search of a million runs' 48 MB for the window's earlier
// lines was ~20 ms of the dashboard's first page). Without zones, all of
// the base is searched.
func TestCodeZonesSearchTheEnd(t *testing.T) {
	const n = 20000
	cs := benchCodeSet(n)
	all := cs.all()
	w := map[ledger.RunID]bool{}
	for _, c := range all[n-300:] {
		w[c.Run] = true
	}
	champ := all[n-600].Run // sharing 20261124T019 with the window: 1,000 runs
	want := cs.windowOf(w, champ)
	if cs.scanned < len(cs.base)*9/10 {
		t.Fatalf("without zones: %d of %d bytes searched", cs.scanned, len(cs.base))
	}
	z := &codeSet{base: cs.base, tail: cs.tail, zones: zonesOf(cs.base, 0, nil)}
	if got := z.windowOf(w, champ); !reflect.DeepEqual(got, want) {
		t.Fatalf("with zones: %d runs, want %d", len(got), len(want))
	}
	if share := float64(z.scanned) / float64(len(z.base)); share > 0.1 {
		t.Errorf("with zones: searched %d of %d bytes (%.3f), want at most 0.1", z.scanned, len(z.base), share)
	}
	before := z.scanned
	if got, want := z.lineOf(all[5].Run), cs.lineOf(all[5].Run); got != want {
		t.Fatalf("lineOf an early run: %d, want %d", got, want)
	}
	if d := z.scanned - before; d > 2*codeZoneBytes+100 {
		t.Errorf("lineOf an early run searched %d bytes, want at most two zones", d)
	}
}

// TestCodeZonesFile: the zones are written beside the base by a rebuild
// and a fold of the tail, and read back only for the base they describe.
func TestCodeZonesFile(t *testing.T) {
	defer func(n int) { codeZoneBytes = n }(codeZoneBytes)
	codeZoneBytes = 4096
	repo, env, _ := scratchLab(t, trainPy("8", "0.04"))
	s, _, err := env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(3000, 3)
	if err := s.Append(recs[:2000]...); err != nil {
		t.Fatal(err)
	}
	g, err := gitrepo.OpenRepo(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	open := func(what string) *codeSet {
		t.Helper()
		cs, err := openCode(env, s, g)
		if err != nil {
			t.Fatal(err)
		}
		fp, base, err := s.ReadCache(codeCacheName, codeCacheVersion)
		if err != nil {
			t.Fatal(err)
		}
		zones := readCodeZones(s, fp, base)
		if zones == nil {
			t.Fatalf("%s: no zones for the base on disk", what)
		}
		checkZones(t, base, zones)
		if !reflect.DeepEqual(zones, cs.zones) {
			t.Fatalf("%s: the zones written are not the ones used", what)
		}
		return cs
	}
	open("rebuilt")
	if err := s.Append(recs[2000:]...); err != nil { // more than codeTailFold: folded into the base
		t.Fatal(err)
	}
	cs := open("folded")
	if got := bytes.Count(cs.base, []byte("\n")); got != 3000 {
		t.Fatalf("folded base: %d lines", got)
	}
	again, err := openCode(env, s, g)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.zones, cs.zones) {
		t.Error("the zones were not read back")
	}
	fp, base, err := s.ReadCache(codeCacheName, codeCacheVersion)
	if err != nil {
		t.Fatal(err)
	}
	// Zones of another base are not used: another length, a zone that
	// does not start a line, another stamp.
	for _, tc := range []struct {
		name    string
		payload []byte
		fp      ledger.Fingerprint
	}{
		{"another length", encodeZones(len(base)+1, cs.zones), fp},
		{"inside a line", encodeZones(len(base), []codeZone{{start: 0, min: "a", max: "z"}, {start: 5, min: "a", max: "z"}}), fp},
		{"another stamp", encodeZones(len(base), cs.zones), ledger.Fingerprint{Size: fp.Size - 1}},
	} {
		if err := s.WriteCache(codeZonesName, codeZonesVersion, tc.fp, tc.payload); err != nil {
			t.Fatal(err)
		}
		if got := readCodeZones(s, fp, base); got != nil {
			t.Errorf("%s: zones read: %d", tc.name, len(got))
		}
	}
	if err := os.Remove(s.CachePath(codeZonesName)); err != nil {
		t.Fatal(err)
	}
	if got := readCodeZones(s, fp, base); got != nil {
		t.Error("zones read from no file")
	}
	// A base written before zones were (or whose zones were lost) is cut
	// once, by the next reader.
	open("cut by a reader")
}

// TestDecodeZones: encodeZones round-trips, and damaged payloads are
// refused.
func TestDecodeZones(t *testing.T) {
	zones := []codeZone{{start: 0, min: "a", max: "c"}, {start: 10, empty: true}, {start: 20, min: "b", max: "b"}}
	got, ok := decodeZones(encodeZones(30, zones), 30)
	if !ok || !reflect.DeepEqual(got, zones) {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	if got, ok := decodeZones(encodeZones(0, nil), 0); !ok || len(got) != 0 {
		t.Fatalf("empty base: %+v %v", got, ok)
	}
	for _, bad := range []string{
		"", "30", "x\n0\ta\tb\n", "30\n", "30\n1\ta\tb\n", "30\n0\ta\tb\n0\ta\tb\n", "30\n0\tb\ta\n",
		"30\n0\t\tb\n", "30\n0\ta\n", "30\n0\ta\tb\tc\n", "30\n0\ta\tb\n30\ta\tb\n", "30\n0\ta\tb\n\n",
	} {
		if got, ok := decodeZones([]byte(bad), 30); ok {
			t.Errorf("%q decoded: %+v", bad, got)
		}
	}
}

// FuzzDecodeZones: any payload decodes without a panic, and what decodes
// is zones a search can use (increasing starts within the base).
func FuzzDecodeZones(f *testing.F) {
	f.Add([]byte("30\n0\ta\tc\n10\t-\n20\tb\tb\n"), 30)
	f.Add([]byte("0\n"), 0)
	f.Add([]byte("5\n0\tz\ta\n"), 5)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		zones, ok := decodeZones(b, n)
		if !ok {
			return
		}
		for i, z := range zones {
			if z.start < 0 || z.start >= max(n, 1) || (i == 0 && z.start != 0) || (i > 0 && z.start <= zones[i-1].start) {
				t.Fatalf("zone %d: %+v of a %d-byte base", i, z, n)
			}
			if !z.empty && (z.min == "" || z.min > z.max) {
				t.Fatalf("zone %d: %+v", i, z)
			}
		}
	})
}
