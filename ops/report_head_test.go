package ops_test

import (
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// TestChampionOnHeadFromTheGraph: the report's "is the champion still
// reachable from HEAD" answers from the ancestry cache's commit graph
// alone (issue 30: reading its kept-run table was ~25 ms of the
// dashboard's first page at 1M runs) and says what the lineages of the
// champion say: on the branch, reset away, and with the champion's commit
// named by its short hash alone.
func TestChampionOnHeadFromTheGraph(t *testing.T) {
	l := newLab(t)
	base := l.experiment("baseline run", "LR = 0.04\nDEPTH = 8\n", ledger.StatusKeep, 0.99)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitrepo.OpenRepo(l.env.Dir)
	if err != nil {
		t.Fatal(err)
	}
	in := ops.DefaultReportInput()
	in.SinceHours = 10000
	for _, tc := range []struct {
		name string
		step func() *ledger.Record // the champion after it
		want string
	}{
		{"champion on the branch", func() *ledger.Record {
			return l.experiment("deeper model depth 10", "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)
		}, "yes"},
		{"champion reset away", func() *ledger.Record {
			champ, err := ops.Show(l.env, ops.ShowInput{Run: "champion"})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.repo.ResetHard(base.CommitFull); err != nil {
				t.Fatal(err)
			}
			return champ.Record
		}, "no"},
		{"champion by its short hash alone", func() *ledger.Record {
			r := *base
			r.RunID, r.CommitFull, r.Timestamp = "20261122T030000Z-short", "", "2026-11-22T03:00:00Z"
			v := 0.9
			r.Metrics = ledger.Metrics{"val_bpb": &v}
			if err := s.Append(&r); err != nil {
				t.Fatal(err)
			}
			return &r
		}, "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			champ := tc.step()
			m, err := ops.Morning(l.env, s, in)
			if err != nil {
				t.Fatal(err)
			}
			if m.Headline.Champion == nil || m.Headline.Champion.RunID != string(champ.RunID) {
				t.Fatalf("champion %+v, want %s", m.Headline.Champion, champ.RunID)
			}
			ls, err := repo.Lineages(s, []ledger.Record{*champ})
			if err != nil {
				t.Fatal(err)
			}
			if want := string(ls.ChampionReachableFromHEAD(champ)); m.Headline.ChampionOnHead != tc.want || want != tc.want {
				t.Fatalf("champion_reachable_from_head = %q, lineages say %q, want %q", m.Headline.ChampionOnHead, want, tc.want)
			}
		})
	}
}
