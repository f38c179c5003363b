package gitrepo

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

// lineageFixture is a scratch repo plus a store whose records are appended
// and pinned the way `memorylab log` does.
type lineageFixture struct {
	t     *testing.T
	repo  *ScratchRepo
	store *ledger.Store
	n     int
	ids   map[string]ledger.RunID // description → run id
}

func newLineageFixture(t *testing.T) *lineageFixture {
	t.Helper()
	dir := t.TempDir()
	repo, err := InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	st := t.TempDir()
	s, _, err := ledger.InitStore(filepath.Join(st, "store"), filepath.Join(st, "results.tsv"), ledger.DefaultConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	return &lineageFixture{t: t, repo: repo, store: s, ids: map[string]ledger.RunID{}}
}

func (f *lineageFixture) commit(name string) string {
	f.t.Helper()
	h, err := f.repo.Commit(name, map[string]string{"train.py": "# " + name + "\n"})
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// log records a run of commit, pinning it first.
func (f *lineageFixture) log(desc, status, commit string) ledger.RunID {
	f.t.Helper()
	f.n++
	id := ledger.RunID(fmt.Sprintf("20261122T01%04dZ-%s-%04x", f.n, commit[:7], f.n))
	g := f.open()
	if err := g.PinRun(id, commit); err != nil {
		f.t.Fatal(err)
	}
	v := 1.0
	r := &ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: id, Timestamp: "2026-11-22T01:00:00Z", Commit: commit[:7], CommitFull: commit,
		Status: status, Description: desc, Metrics: ledger.Metrics{"val_bpb": &v}}
	if err := f.store.Append(r); err != nil {
		f.t.Fatal(err)
	}
	f.ids[desc] = id
	return id
}

func (f *lineageFixture) open() *Repo {
	f.t.Helper()
	g, err := OpenRepo(f.repo.Dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return g
}

func (f *lineageFixture) lineages() *LineageSet {
	f.t.Helper()
	recs, _, err := f.store.ReadAll()
	if err != nil {
		f.t.Fatal(err)
	}
	ls, err := f.open().Lineages(f.store, recs)
	if err != nil {
		f.t.Fatal(err)
	}
	f.agree(ls, recs)
	f.rootsAgree(recs)
	return ls
}

// rootsAgree checks that log's lineage root of a new run on each record's
// commit, read from a warm cache in place (lineageRootWarm), is the one
// the full path (the kept-run table decoded, compute over every commit)
// gives, without decoding the table.
func (f *lineageFixture) rootsAgree(recs []ledger.Record) {
	f.t.Helper()
	for i, r := range recs {
		if !IsFullHash(r.CommitFull) {
			continue
		}
		h := plumbing.NewHash(r.CommitFull)
		for _, kept := range []bool{false, true} {
			id := ledger.RunID(fmt.Sprintf("20261122T029999Z-new-%d", i))
			g := f.open()
			an, err := g.loadAncestry(f.store)
			if err != nil {
				f.t.Fatal(err)
			}
			tips := []plumbing.Hash{h}
			for _, k := range an.kept {
				if !k.commit.IsZero() {
					tips = append(tips, k.commit)
				}
			}
			if err := g.extend(an, tips); err != nil {
				f.t.Fatal(err)
			}
			an.resolveKept()
			an.save(f.store)
			runs := append([]keptRun(nil), an.kept...)
			if kept {
				runs = append(runs, keptRun{id: id, commit: h})
			}
			want := an.compute(runs).lineage(id, h, kept)
			before := keptDecoded.Load()
			root, state, ok, err := g.lineageRootWarm(f.store, id, h, kept)
			if err != nil || !ok {
				f.t.Fatalf("warm path: ok %v, %v", ok, err)
			}
			if n := keptDecoded.Load() - before; n != 0 {
				f.t.Errorf("the warm path decoded %d kept-run entries, want none", n)
			}
			if root != want.Root || state != want.State {
				f.t.Errorf("%s (kept %v): warm root %s %s, full %s %s", r.Description, kept, ledger.Short(root), state, ledger.Short(want.Root), want.State)
			}
		}
	}
}

// agree checks that each run's lineage alone (LineageOf, show's) is the
// one Lineages computes with every run's, and so is its reachability.
func (f *lineageFixture) agree(ls *LineageSet, recs []ledger.Record) {
	f.t.Helper()
	var kept ledger.RecordKeys
	for _, r := range recs {
		if r.Status == ledger.StatusKeep {
			kept = append(kept, r)
		}
	}
	for _, r := range recs {
		l, reach, err := f.open().LineageOf(f.store, r.RunID, r.Commit, r.CommitFull, r.Status == ledger.StatusKeep, kept)
		if err != nil {
			f.t.Fatal(err)
		}
		want := ls.ByRun[r.RunID]
		wantReach := ls.ReachableFromHEAD(want.Commit)
		if want.Commit == "" {
			wantReach = ReachMissing
		}
		if l != want || reach != wantReach {
			f.t.Errorf("%s alone: %+v, %s; among every run's: %+v, %s", r.Description, l, reach, want, wantReach)
		}
	}
}

func (f *lineageFixture) chain(ls *LineageSet, desc string) string {
	var names []string
	for _, id := range ls.Chain(f.ids[desc]) {
		for d, i := range f.ids {
			if i == id {
				names = append(names, d)
			}
		}
	}
	return strings.Join(names, ">")
}

func TestLineagesMultiCommitAndReset(t *testing.T) {
	f := newLineageFixture(t)
	b0 := f.commit("initial")
	c1 := f.commit("baseline")
	f.log("baseline", ledger.StatusKeep, c1)
	f.commit("lr part 1") // an experiment of two commits: only the second is logged
	c3 := f.commit("lr part 2")
	f.log("lr", ledger.StatusKeep, c3)
	c4 := f.commit("width")
	f.log("width", ledger.StatusDiscard, c4)
	if err := f.repo.ResetHard(c3); err != nil {
		t.Fatal(err)
	}
	if err := f.repo.Prune(); err != nil {
		t.Fatal(err)
	}
	c5 := f.commit("rope")
	f.log("rope", ledger.StatusKeep, c5)
	f.log("rope rerun", ledger.StatusDiscard, c5)

	ls := f.lineages()
	cases := []struct {
		desc, chain, prev string
		depth             int
	}{
		{"baseline", "baseline", "", 1},
		{"lr", "baseline>lr", "baseline", 2},
		{"width", "baseline>lr", "lr", 2},
		{"rope", "baseline>lr>rope", "lr", 3},
		{"rope rerun", "baseline>lr>rope", "rope", 3},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			l := ls.ByRun[f.ids[tc.desc]]
			if !l.Known() {
				t.Fatalf("state %s", l.State)
			}
			if l.Root != b0 || l.RootRun != f.ids["baseline"] {
				t.Errorf("root %s (run %s), want %s (baseline): one lineage across the multi-commit experiment", ledger.Short(l.Root), l.RootRun, ledger.Short(b0))
			}
			if got := f.chain(ls, tc.desc); got != tc.chain {
				t.Errorf("chain %s, want %s", got, tc.chain)
			}
			if tc.prev != "" && l.Prev != f.ids[tc.prev] || tc.prev == "" && l.Prev != "" {
				t.Errorf("prev %s, want %s", l.Prev, tc.prev)
			}
			if l.Depth != tc.depth {
				t.Errorf("depth %d, want %d", l.Depth, tc.depth)
			}
		})
	}
	if r := ls.ReachableFromHEAD(c4); r != ReachNo {
		t.Errorf("reset-away discard reachable = %s", r)
	}
	if r := ls.ReachableFromHEAD(c3); r != ReachYes {
		t.Errorf("kept lr reachable = %s", r)
	}

	t.Run("log-time root agrees and reads only the ledger tail", func(t *testing.T) {
		c6 := f.commit("next")
		root, state, err := f.open().LineageRootForNewRun(f.store, "20261122T019999Z-"+ledger.RunID(c6[:7]), c6, false)
		if err != nil || state != LineageKnown || root != b0 {
			t.Fatalf("root %s %s %v, want %s", ledger.Short(root), state, err, ledger.Short(b0))
		}
	})
}

func TestLineagesMerge(t *testing.T) {
	f := newLineageFixture(t)
	b0 := f.commit("initial")
	c1 := f.commit("baseline")
	f.log("baseline", ledger.StatusKeep, c1)
	// Branch "side" from the baseline with its own kept run.
	g := f.open()
	if _, err := g.CreateBranch("side", c1, false); err != nil {
		t.Fatal(err)
	}
	m1 := f.commit("main idea")
	f.log("main idea", ledger.StatusKeep, m1)
	if err := f.repo.Checkout("side", false); err != nil {
		t.Fatal(err)
	}
	x1 := f.commit("side idea")
	f.log("side idea", ledger.StatusKeep, x1)
	x2 := f.commit("side idea 2")
	f.log("side idea 2", ledger.StatusKeep, x2)
	if err := f.repo.Checkout("main", false); err != nil {
		t.Fatal(err)
	}
	m, err := f.repo.Merge("merge side", x2, map[string]string{"train.py": "# merged\n"})
	if err != nil {
		t.Fatal(err)
	}
	f.log("merged", ledger.StatusKeep, m)

	ls := f.lineages()
	l := ls.ByRun[f.ids["merged"]]
	if !l.Known() || l.Root != b0 || l.RootRun != f.ids["baseline"] {
		t.Fatalf("merged lineage %+v, want root %s", l, ledger.Short(b0))
	}
	// The newest kept ancestor is on the side branch (generation 4 > 3).
	if got := f.chain(ls, "merged"); got != "baseline>side idea>side idea 2>merged" {
		t.Errorf("chain %s", got)
	}
	for _, c := range []string{m1, x1, x2, c1} {
		if r := ls.ReachableFromHEAD(c); r != ReachYes {
			t.Errorf("%s reachable from the merge = %s", ledger.Short(c), r)
		}
	}
	if got := f.chain(ls, "main idea"); got != "baseline>main idea" {
		t.Errorf("main idea chain %s", got)
	}
}

func TestLineagesShallowClone(t *testing.T) {
	f := newLineageFixture(t)
	f.commit("initial")
	c1 := f.commit("baseline")
	f.log("baseline", ledger.StatusKeep, c1)
	c2 := f.commit("boundary")
	c3 := f.commit("lr")
	f.log("lr", ledger.StatusKeep, c3)
	// A clone with depth 2 lists its boundary commit in .git/shallow.
	if err := os.WriteFile(filepath.Join(f.repo.Dir, ".git", "shallow"), []byte(c2+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ls := f.lineages()
	if l := ls.ByRun[f.ids["lr"]]; l.State != LineageShallow || l.Root != "" || l.Depth != 0 {
		t.Errorf("lr above the boundary: %+v, want unknown (shallow clone)", l)
	}
	if l := ls.ByRun[f.ids["baseline"]]; !l.Known() {
		t.Errorf("baseline below the boundary has full history here: %+v", l)
	}
	if r := ls.ReachableFromHEAD(c1); r != ReachShallow {
		t.Errorf("reachability across the boundary = %s, want %s", r, ReachShallow)
	}
	if r := ls.ReachableFromHEAD(c3); r != ReachYes {
		t.Errorf("HEAD itself = %s", r)
	}
	_, state, err := f.open().LineageRootForNewRun(f.store, "20261122T019999Z-"+ledger.RunID(c3[:7]), c3, true)
	if err != nil || state != LineageShallow {
		t.Errorf("log-time state %s %v", state, err)
	}
}

func TestLineagesCacheAvoidsRewalking(t *testing.T) {
	f := newLineageFixture(t)
	b0 := f.commit("initial")
	c1 := f.commit("baseline")
	f.log("baseline", ledger.StatusKeep, c1)
	c2 := f.commit("unlogged step")
	c3 := f.commit("lr")
	f.log("lr", ledger.StatusKeep, c3)
	if l := f.lineages().ByRun[f.ids["lr"]]; l.Root != b0 {
		t.Fatalf("root %s", l.Root)
	}
	// Delete the unlogged commit's object: a fresh walk would now say
	// "missing"; the cached graph still knows its parents.
	if err := f.repo.r.DeleteObject(plumbing.NewHash(c2)); err != nil {
		t.Fatal(err)
	}
	if l := f.lineages().ByRun[f.ids["lr"]]; !l.Known() || l.Root != b0 {
		t.Fatalf("with cache: %+v", l)
	}
	if err := os.Remove(f.store.Path(ledger.CacheDir, ancestryFile)); err != nil {
		t.Fatal(err)
	}
	if l := f.lineages().ByRun[f.ids["lr"]]; l.State != LineageMissing {
		t.Fatalf("without cache the missing object must show: %+v", l)
	}

	t.Run("rewritten ledger rebuilds the kept table", func(t *testing.T) {
		g := f.open()
		if _, _, err := g.LineageRootForNewRun(f.store, "20261122T019999Z-aaaaaaa", c3, false); err != nil {
			t.Fatal(err)
		}
		// Drop every record: the kept runs must go with them.
		if err := os.WriteFile(f.store.LedgerPath(), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		an, err := g.loadAncestry(f.store)
		if err != nil {
			t.Fatal(err)
		}
		if len(an.kept) != 0 {
			t.Fatalf("kept table survived a rewrite: %v", an.kept)
		}
	})
}

func FuzzAncestryCacheDecode(f *testing.F) {
	an := &ancestry{idx: map[plumbing.Hash]int32{}, fp: ledger.Fingerprint{Size: 10, TailHash: strings.Repeat("ab", 32)}}
	an.add(plumbing.NewHash("1111111111111111111111111111111111111111"), nil)
	an.add(plumbing.NewHash("2222222222222222222222222222222222222222"), []plumbing.Hash{plumbing.NewHash("1111111111111111111111111111111111111111")})
	an.kept = []keptRun{{id: "20261122T010000Z-2222222", commit: plumbing.NewHash("2222222222222222222222222222222222222222")}, {id: "x", short: "abc1234"}}
	f.Add(an.encode())
	f.Add([]byte("MLANC\x01\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var a ancestry
		if a.decode(data) != nil {
			return
		}
		again := a.encode()
		var b ancestry
		if err := b.decode(again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if string(b.encode()) != string(again) {
			t.Fatal("encode is not stable")
		}
	})
}

// Records written by the Python tool carry only a 7-character commit: they
// are resolved through their pin, or among commits reachable from HEAD.
func TestLineagesShortCommitRecords(t *testing.T) {
	f := newLineageFixture(t)
	b0 := f.commit("initial")
	c1 := f.commit("baseline")
	c2 := f.commit("lr")
	c3 := f.commit("discarded")
	if err := f.repo.ResetHard(c2); err != nil {
		t.Fatal(err)
	}
	g := f.open()
	add := func(id ledger.RunID, status, commit string, pin bool) {
		if pin {
			if err := g.PinRun(id, commit); err != nil {
				t.Fatal(err)
			}
		}
		v := 1.0
		if err := f.store.Append(&ledger.Record{RunID: id, Timestamp: "2026-11-22T01:00:00Z", Commit: commit[:7], Status: status, Description: string(id), Metrics: ledger.Metrics{"val_bpb": &v}}); err != nil {
			t.Fatal(err)
		}
	}
	add("20261122T010000Z-"+ledger.RunID(c1[:7]), ledger.StatusKeep, c1, false)
	add("20261122T010100Z-"+ledger.RunID(c2[:7]), ledger.StatusKeep, c2, false)
	add("20261122T010200Z-"+ledger.RunID(c3[:7]), ledger.StatusDiscard, c3, true) // reset away: only its pin reaches it
	add("20261122T010300Z-deadbee", ledger.StatusDiscard, "deadbeef00000000000000000000000000000000", false)
	ls := f.lineages()
	for id, want := range map[ledger.RunID]int{"20261122T010100Z-" + ledger.RunID(c2[:7]): 2, "20261122T010200Z-" + ledger.RunID(c3[:7]): 2} {
		l := ls.ByRun[id]
		if !l.Known() || l.Root != b0 || l.Depth != want {
			t.Errorf("%s: %+v, want root %s depth %d", id, l, ledger.Short(b0), want)
		}
	}
	if l := ls.ByRun["20261122T010300Z-deadbee"]; l.State != LineageMissing {
		t.Errorf("unknown commit: %+v", l)
	}
}

// TestAncestryFromPass: the kept-run table a first use takes from its one
// read of the ledger (ledger.Pass) is the table a scan of the ledger
// builds — every kept run in ledger order, retracted ones and runs with
// only a short commit included — and a table the pass covers more of is
// replaced, one it covers less of is caught up from the ledger (issue 30).
func TestAncestryFromPass(t *testing.T) {
	full := "0123456789abcdef0123456789abcdef01234567"
	var lines strings.Builder
	for i, tc := range []struct {
		ts, status, commitFull string
	}{
		{"2026-11-22T03:00:00Z", ledger.StatusKeep, full},
		{"2026-11-22T01:00:00Z", ledger.StatusKeep, ""}, // out of order, short commit only
		{"2026-11-22T02:00:00Z", ledger.StatusDiscard, full},
		{"2026-11-22T04:00:00Z", ledger.StatusKeep, full},
	} {
		lines.WriteString(ledgertest.RecordLine(t, fmt.Sprintf("20261122T0%d0000Z-0123456", i), full, func(r *ledger.Record) {
			r.Timestamp, r.Status, r.CommitFull = tc.ts, tc.status, tc.commitFull
		}))
	}
	lines.WriteString(ledgertest.RecordLine(t, "20261122T090000Z-corr001", "", func(r *ledger.Record) {
		*r = ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: "20261122T090000Z-corr001", Timestamp: "2026-11-22T09:00:00Z",
			Correction: &ledger.Correction{Kind: ledger.CorrectionRetract, RunID: "20261122T030000Z-0123456", Text: "bad"}}
	}))
	s := ledgertest.Store(t, lines.String())
	g := &Repo{}
	want, err := g.loadAncestry(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.kept) != 3 {
		t.Fatalf("scan: %d kept runs, want 3", len(want.kept))
	}
	p, err := s.ReadPass(s.Config.Metric)
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.loadAncestryFrom(s, p)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.kept) != fmt.Sprint(want.kept) || got.fp != want.fp || !got.dirty || got.tried != 0 {
		t.Errorf("from the pass: %v %v dirty %v tried %d; scanned: %v %v", got.kept, got.fp, got.dirty, got.tried, want.kept, want.fp)
	}
	// The ledger grew after the pass: the rest is scanned.
	more := ledgertest.RecordLine(t, "20261122T100000Z-0123456", full, func(r *ledger.Record) { r.Timestamp, r.Status = "2026-11-22T10:00:00Z", ledger.StatusKeep })
	f, err := os.OpenFile(s.LedgerPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(more); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err = g.loadAncestryFrom(s, p)
	if err != nil {
		t.Fatal(err)
	}
	want, err = g.loadAncestry(s)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.kept) != fmt.Sprint(want.kept) || got.fp != want.fp || len(got.kept) != 4 {
		t.Errorf("after growing, from the pass: %v %v; scanned: %v %v", got.kept, got.fp, want.kept, want.fp)
	}
}

// TestLineageOfKeepsTheKeptTable: a run's lineage alone reads the cached
// graph without the kept-run table after it, and when the graph grows it
// saves it with the table copied unchanged from the file, so log's
// catch-up of the table (LineageRootForNewRun) is neither lost nor redone.
func TestLineageOfKeepsTheKeptTable(t *testing.T) {
	f := newLineageFixture(t)
	f.commit("initial")
	c1 := f.commit("baseline")
	f.log("baseline", ledger.StatusKeep, c1)
	if _, _, err := f.open().LineageRootForNewRun(f.store, "20261122T019999Z-aaaaaaa", c1, false); err != nil {
		t.Fatal(err)
	}
	path := f.store.Path(ledger.CacheDir, ancestryFile)
	before, ok := keptSection(path)
	if !ok {
		t.Fatal("no kept table written")
	}
	c2 := f.commit("lr")
	id := f.log("lr", ledger.StatusKeep, c2)
	if an := loadGraph(f.store); an.keptUnread != true || len(an.kept) != 0 || an.fp.Size != 0 {
		t.Fatalf("loadGraph read the kept table: %+v", an.kept)
	}
	kept := ledger.RecordKeys{{RunID: f.ids["baseline"], Commit: c1[:7], CommitFull: c1}, {RunID: id, Commit: c2[:7], CommitFull: c2}}
	l, reach, err := f.open().LineageOf(f.store, id, c2[:7], c2, true, kept)
	if err != nil || l.Prev != f.ids["baseline"] || l.Depth != 2 || reach != ReachYes {
		t.Fatalf("lineage %+v, %s, %v", l, reach, err)
	}
	after, ok := keptSection(path)
	if !ok || string(after) != string(before) {
		t.Fatalf("kept table changed by a lineage alone")
	}
	if _, ok := loadGraph(f.store).idx[plumbing.NewHash(c2)]; !ok {
		t.Fatal("the grown graph was not saved")
	}
}

// TestAncestryVersion2IsReadBack: a version 2 cache (the prefix and kept
// runs before the graph) is read, not rebuilt from the whole ledger, and
// written back as version 3 with the same content.
func TestAncestryVersion2IsReadBack(t *testing.T) {
	h1, h2 := plumbing.NewHash("1111111111111111111111111111111111111111"), plumbing.NewHash("2222222222222222222222222222222222222222")
	want := &ancestry{idx: map[plumbing.Hash]int32{}, fp: ledger.Fingerprint{Size: 10, TailHash: strings.Repeat("ab", 32)},
		kept: []keptRun{{id: "20261122T010000Z-2222222", commit: h2}, {id: "x", short: "abc1234"}}}
	want.add(h1, nil)
	want.add(h2, []plumbing.Hash{h1})
	v2 := append([]byte(nil), ancestryMagic...)
	v2 = append(v2, 2, '\n')
	v2 = binary.AppendVarint(v2, want.fp.Size)
	tail, _ := hex.DecodeString(want.fp.TailHash)
	v2 = ledger.AppendString(v2, string(tail))
	v2 = binary.AppendUvarint(v2, uint64(len(want.kept)))
	for _, k := range want.kept {
		v2 = ledger.AppendString(v2, string(k.id))
		v2 = append(v2, k.commit[:]...)
		v2 = ledger.AppendString(v2, k.short)
	}
	v2 = binary.AppendUvarint(v2, 2)
	v2 = append(append(v2, h1[:]...), 0)
	v2 = append(append(append(v2, h2[:]...), 1), h1[:]...)
	var got ancestry
	if err := got.decode(v2); err != nil || !got.dirty {
		t.Fatalf("version 2: %v (dirty %v)", err, got.dirty)
	}
	if string(got.encode()) != string(want.encode()) {
		t.Fatalf("version 2 read as %+v, want %+v", got, want)
	}
}
