package ops

import (
	"sort"
	"strings"
	"time"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/results"
)

// Page sizes of the runs table.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// PageInput asks for one page of the runs table: filters as list's, plus a
// tag and a search, a sort, and the page.
type PageInput struct {
	ListInput
	Tag    string // only runs with this tag
	Query  string // search: the novelty index's matches for the text, then runs whose text contains it
	Sort   string // time (default), metric, status, family, memory
	Desc   bool   // descending (time: newest first)
	Page   int    // 1-based; past the last page means the last page
	Size   int    // rows per page (DefaultPageSize, at most MaxPageSize)
	Metric string // the store's primary metric (set by the caller)
}

// PageRow is one row of the runs table.
type PageRow struct {
	ListItem
	MemoryGB *float64 `json:"memory_gb"`
	Tags     []string `json:"tags"`
}

// PageResult is one page and how many runs matched.
type PageResult struct {
	Rows    []PageRow `json:"rows"`
	Matched int       `json:"matched"`
	Total   int       `json:"total"`
	Page    int       `json:"page"`
	Pages   int       `json:"pages"`
	Metric  string    `json:"metric"`
	Goal    string    `json:"goal"`
}

// SearchFunc returns the ledger offsets of the runs the novelty index finds
// for a normalised text, best first.
type SearchFunc func(norm string) ([]int64, error)

// check validates a page request and fills in its defaults: page 1, the
// default size, at most MaxPageSize.
func (in *PageInput) check() error {
	in.Status = SplitTags(in.Status)
	if err := ledger.CheckStatuses("status", in.Status...); err != nil {
		return err
	}
	switch in.Sort {
	case "", "time", "metric", "status", "family", "memory":
	default:
		return ledger.BadInputf("sort must be time, metric, status, family or memory, got %q", in.Sort)
	}
	if in.Page < 1 {
		in.Page = 1
	}
	if in.Size <= 0 {
		in.Size = DefaultPageSize
	}
	in.Size = min(in.Size, MaxPageSize)
	return nil
}

// RunsPage filters, searches, sorts and pages the catalog's slim records
// (in ledger order, offsets beside them). search may be nil (no index).
func RunsPage(cat *ledger.Catalog, cfg ledger.Config, in PageInput, now time.Time, search SearchFunc) (*PageResult, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	filters := in.ListInput
	filters.Best, filters.Limit = 0, 0
	sel := filterRuns(cat.Records, filters, cfg, now)
	if in.Tag != "" {
		kept := sel[:0]
		for _, r := range sel {
			for _, t := range r.Tags {
				if t == in.Tag {
					kept = append(kept, r)
					break
				}
			}
		}
		sel = kept
	}
	relevance := map[*ledger.Record]int{}
	if q := strings.TrimSpace(in.Query); q != "" {
		sel = searchRuns(cat, sel, q, search, relevance)
	}
	if len(relevance) > 0 && in.Sort == "" {
		sort.SliceStable(sel, func(i, j int) bool { return relevance[sel[i]] < relevance[sel[j]] })
	} else {
		sortRuns(sel, in.Sort, in.Desc, cfg)
	}
	pages := max(1, (len(sel)+in.Size-1)/in.Size)
	in.Page = min(in.Page, pages) // a page past the end is the last one; (Page-1)*Size cannot overflow
	res := &PageResult{Matched: len(sel), Total: len(cat.Records), Page: in.Page, Metric: cfg.Metric, Goal: cfg.Goal,
		Pages: pages, Rows: []PageRow{}}
	from := min((in.Page-1)*in.Size, len(sel))
	rp := registry.CollectReplicates(cat.Records, registry.GoalOf(cfg))
	for _, r := range sel[from:min(from+in.Size, len(sel))] {
		row := PageRow{ListItem: listItemOf(r, cfg.Metric, rp.Spread), Tags: r.Tags, MemoryGB: results.RowFromRecord(r, cfg.Metric).MemoryGB}
		if row.Tags == nil {
			row.Tags = []string{}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// searchRuns keeps the runs of sel the index finds for q (best first; rank
// recorded in relevance), then those whose description, hypothesis, tags,
// family, run id or commit contain q (case-insensitive).
func searchRuns(cat *ledger.Catalog, sel []*ledger.Record, q string, search SearchFunc, relevance map[*ledger.Record]int) []*ledger.Record {
	in := make(map[*ledger.Record]bool, len(sel))
	for _, r := range sel {
		in[r] = true
	}
	byOffset := make(map[int64]*ledger.Record, len(cat.Offsets))
	for i, off := range cat.Offsets {
		byOffset[off] = &cat.Records[i]
	}
	var out []*ledger.Record
	if search != nil {
		if offs, err := search(novelty.Normalize(q)); err == nil {
			for _, off := range offs {
				if r := byOffset[off]; r != nil && in[r] {
					if _, seen := relevance[r]; !seen {
						relevance[r] = len(relevance)
						out = append(out, r)
					}
				}
			}
		}
	}
	lq := strings.ToLower(q)
	for _, r := range sel {
		if _, seen := relevance[r]; seen {
			continue
		}
		text := strings.ToLower(strings.Join(append([]string{r.Description, r.Hypothesis, r.Family, string(r.RunID), r.Commit}, r.Tags...), "\n"))
		if strings.Contains(text, lq) {
			relevance[r] = len(relevance)
			out = append(out, r)
		}
	}
	return out
}

// sortRuns sorts by key (time, metric, status, family, memory), ties by
// (timestamp, run id). The metric sorts best first and puts runs without it
// last; desc reverses. Keys are read once per run, not per comparison (a
// metric sort of 100,000 runs spent most of its time in map lookups).
func sortRuns(sel []*ledger.Record, key string, desc bool, cfg ledger.Config) {
	type keyed struct {
		r   *ledger.Record
		s   string
		v   float64
		has bool
	}
	ks := make([]keyed, len(sel))
	for i, r := range sel {
		k := keyed{r: r}
		switch key {
		case "metric":
			k.v, k.has = r.Metric(cfg.Metric)
		case "memory":
			k.v, k.has = r.Metric("peak_vram_mb")
		case "status":
			k.s = r.Status
		case "family":
			k.s = r.Family
		}
		ks[i] = k
	}
	less := func(a, b *keyed) bool {
		switch key {
		case "metric", "memory":
			if a.has != b.has {
				return a.has
			}
			if a.has && a.v != b.v {
				if key == "metric" {
					return cfg.Better(a.v, b.v)
				}
				return a.v < b.v
			}
		case "status", "family":
			if a.s != b.s {
				return a.s < b.s
			}
		}
		if a.r.Timestamp != b.r.Timestamp {
			return a.r.Timestamp < b.r.Timestamp
		}
		return a.r.RunID < b.r.RunID
	}
	sort.Slice(ks, func(i, j int) bool { // keys are unique: (timestamp, run id) breaks ties
		if desc {
			return less(&ks[j], &ks[i])
		}
		return less(&ks[i], &ks[j])
	})
	for i := range ks {
		sel[i] = ks[i].r
	}
}

// listItem is a run as list prints it.
func listItem(r *ledger.Record, metric string) ListItem {
	it := ListItem{RunID: string(r.RunID), Timestamp: r.Timestamp, Status: r.Status, Metric: metric,
		Branch: r.Branch, Commit: r.Commit, Family: r.Family, Description: r.Description, LineageRoot: r.LineageRoot,
		Dirty: r.Dirty != nil && *r.Dirty}
	if v, ok := r.Metric(metric); ok {
		it.Value = &v
	}
	for _, k := range []string{"total_seconds", "training_seconds"} {
		if v, ok := r.Metric(k); ok && v >= 0 {
			it.DurationS = &v
			break
		}
	}
	return it
}

// listItemOf is listItem with the run's seed, hardware, items and
// replicate group (spread: registry.Replicates.Spread, or the run index's
// copy of it).
func listItemOf(r *ledger.Record, metric string, spread func(*ledger.Record) (evidence.Spread, bool)) ListItem {
	it := listItem(r, metric)
	it.Seed, it.Hardware, it.Items = r.Seed, r.Hardware.Key(), r.Items
	if sp, ok := spread(r); ok {
		it.Replicates = &sp
	}
	return it
}
