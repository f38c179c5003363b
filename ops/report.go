package ops

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/report"
)

// ReportInput is what morning report to write, and where.
type ReportInput struct {
	SinceHours    float64 // window in hours (report.DefaultSinceHours)
	Format        string  // md, html or json
	Output        string  // write only this file; "" writes reports/latest.* and a timestamped copy (json: returned, not written); "-" (ToStdout) writes nothing and returns the report
	PlateauWindow int     // runs that must bring an improvement
	MinDelta      float64 // smallest gain that counts as an improvement
}

// ToStdout as ReportInput.Output writes no file: the report is returned for
// the front end to print (`report -o -`).
const ToStdout = "-"

// DefaultReportInput is the report `memorylab report` writes without flags.
func DefaultReportInput() ReportInput {
	return ReportInput{SinceHours: report.DefaultSinceHours, Format: "md",
		PlateauWindow: report.DefaultPlateauWindow, MinDelta: report.DefaultMinDelta}
}

func (in ReportInput) validate() error {
	switch in.Format {
	case "md", "html", "json":
	default:
		return ledger.BadInputf("--format must be md, html or json, got %q", in.Format)
	}
	if err := CheckWindowHours(in.SinceHours); err != nil {
		return err
	}
	if in.PlateauWindow < 1 {
		return ledger.BadInputf("--plateau-window must be at least 1, got %d", in.PlateauWindow)
	}
	return CheckMinDelta(in.MinDelta)
}

// MaxWindowHours is the longest report or list window, in hours (about 114
// years): a longer one would overflow a time.Duration.
const MaxWindowHours = 1e6

// CheckWindowHours refuses a report window that is not a finite number of
// hours in (0, MaxWindowHours] (NaN, ±Inf, 0, negative, 1e300).
func CheckWindowHours(h float64) error {
	if !(h > 0 && h <= MaxWindowHours) { // NaN fails every comparison
		return ledger.BadInputf("--since-hours must be a positive number of hours up to %g, got %v", MaxWindowHours, h)
	}
	return nil
}

// CheckMinDelta refuses a minimum gain that is negative or not finite.
func CheckMinDelta(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return ledger.BadInputf("--min-delta must be zero or positive, got %v", v)
	}
	return nil
}

// ReportResult is a rendered report and the files written.
type ReportResult struct {
	Morning report.Morning
	Data    []byte   // the rendered report (markdown, HTML or indented JSON)
	Paths   []string // files written; none for JSON without Output
}

// Report renders the morning report and writes it (see ReportInput.Output).
func Report(env Env, in ReportInput) (*ReportResult, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	s, _, err := env.Open()
	if err != nil {
		return nil, err
	}
	return WriteReport(env, s, in)
}

// Morning builds the morning report of an open store.
func Morning(env Env, s *ledger.Store, in ReportInput) (report.Morning, error) {
	cat, err := env.catalog(s)
	if err != nil {
		return report.Morning{}, err
	}
	return MorningOf(env, s, cat, in)
}

// MorningOf builds the morning report from a catalog of s caught up with
// the ledger (serve keeps one in memory).
func MorningOf(env Env, s *ledger.Store, cat *ledger.Catalog, in ReportInput) (report.Morning, error) {
	if err := CheckWindowHours(in.SinceHours); err != nil {
		return report.Morning{}, err
	}
	st, fp, behind, err := LoadRegistry(s, env.Notice, cat)
	if err != nil {
		return report.Morning{}, err
	}
	if behind != 0 {
		if b, err := st.Marshal(); err == nil {
			_ = s.WriteCache(RegistryStateFile, registry.StateVersion, fp, b) // a cache: failure only costs time
		}
	}
	m := report.BuildMorning(cat.Records, st, report.MorningOptions{Now: env.Now(), SinceHours: in.SinceHours,
		PlateauWindow: in.PlateauWindow, MinDelta: in.MinDelta})
	m.Headline.ChampionOnHead = championOnHead(env, s, cat.Records, m.Headline.Champion)
	m.Swept = swept(env, s, cat.Records, m.WindowStart)
	m.ArcMemo = arcmemoSection(env, s, cat.Records, m.WindowStart)
	m.Curves = morningCurves(s, &m)
	if blocked, err := s.ReadBlocked(); err != nil {
		env.notef("note: blocked ideas unreadable: %v", err)
	} else {
		m.Blocked = report.BlockedIn(blocked, m.WindowStart)
	}
	m.Swarm = swarmSection(env, cat.Records, m.WindowStart)
	return m, nil
}

// swept is "What was swept": the parameters the window's runs changed,
// from the code cache; none outside a repository or when the code cannot
// be read (the report never fails for it).
func swept(env Env, s *ledger.Store, recs []ledger.Record, windowStart string) []report.SweptParam {
	out := []report.SweptParam{}
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return out
	}
	start, err := time.Parse(time.RFC3339, windowStart)
	if err != nil {
		return out
	}
	inWindow := map[ledger.RunID]bool{}
	for i := range recs {
		if ledger.AtOrAfter(recs[i].Timestamp, windowStart, start) {
			inWindow[recs[i].RunID] = true
		}
	}
	res, err := ParamsOf(env, s, repo, ParamsInput{window: inWindow})
	if err != nil {
		return out
	}
	for _, sw := range res.Sweeps {
		if len(out) == report.MaxSwept {
			break
		}
		p := report.SweptParam{Name: sw.Name, File: sw.File, Runs: sw.Edited, Values: len(sw.Values), BestValue: sw.BestValue, Champion: sw.Champion}
		p.Retry = []report.RetryValue{}
		for _, v := range sw.Values {
			if v.Value == sw.BestValue && v.Best != nil {
				b := *v.Best
				p.Best = &b
			}
			if v.Retry != nil {
				p.Retry = append(p.Retry, report.RetryValue{Value: v.Value, RunID: string(v.Retry.RunID), KeepsSince: v.Retry.KeepsSince, Text: v.Retry.Text()})
			}
		}
		out = append(out, p)
	}
	return out
}

// championOnHead answers "is the champion still reachable from HEAD" from
// git ancestry; "" outside a repository (a report still works there).
func championOnHead(env Env, s *ledger.Store, recs []ledger.Record, champ *report.BoardRow) string {
	if champ == nil {
		return ""
	}
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return ""
	}
	var rec *ledger.Record
	for i := len(recs) - 1; i >= 0; i-- {
		if string(recs[i].RunID) == champ.RunID {
			rec = &recs[i]
			break
		}
	}
	if rec == nil || rec.Commit == "" {
		return ""
	}
	// The answer reads the champion's commit and HEAD alone, so the
	// lineages of the champion alone give it (issue 30: those of every run
	// were ~1 s and 370 MB of a report at 1M runs).
	ls, err := repo.Lineages(s, []ledger.Record{*rec})
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return string(ls.ChampionReachableFromHEAD(rec))
}

// WriteReport renders the report of an open store and writes it.
func WriteReport(env Env, s *ledger.Store, in ReportInput) (*ReportResult, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	m, err := Morning(env, s, in)
	if err != nil {
		return nil, err
	}
	res := &ReportResult{Morning: m}
	switch in.Format {
	case "json":
		if res.Data, err = json.MarshalIndent(m, "", "  "); err != nil {
			return nil, err
		}
		res.Data = append(res.Data, '\n')
		if in.Output == "" || in.Output == ToStdout {
			return res, nil
		}
	case "html":
		if res.Data, err = m.HTML(); err != nil {
			return nil, err
		}
	default:
		res.Data = m.Markdown()
	}
	if in.Output == ToStdout {
		return res, nil
	}
	if in.Output != "" {
		p := env.Abs(in.Output)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("unable to create %s: %w", filepath.Dir(p), err)
		}
		res.Paths = []string{p}
		return res, atomicfile.WriteFileAtomic(p, res.Data, 0o644)
	}
	dir := s.Path(ledger.ReportsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("unable to create %s: %w", dir, err)
	}
	res.Paths = []string{filepath.Join(dir, "latest."+in.Format), filepath.Join(dir, env.Now().UTC().Format("20060102T150405Z")+"."+in.Format)}
	for _, p := range res.Paths {
		if err := atomicfile.WriteFileAtomic(p, res.Data, 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}
