package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

// The MCP server is a front end over the same operations as the command
// line (package ops): a tool's input becomes the operation's input, and its
// result is the operation's result, which is also what the command prints
// with --json, field for field. Failures come back as tool errors carrying
// the operation's one-line message and the exit code the CLI would give.

func mcpCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve memorylab to a coding agent over the Model Context Protocol (stdio)",
		UsageText: "memorylab mcp [--allow-path DIR]...",
		Description: "Runs an MCP server on stdin/stdout for the agent that drives the loop (Claude Code, Codex, …):\n" +
			"tools check, log, report, list, show, compare and best, whose arguments are the commands' flags and\n" +
			"whose results are their --json output; resources memorylab://report/latest (the morning report,\n" +
			"markdown) and memorylab://runs/{run_id}. Stdout carries only the protocol; diagnostics go to stderr.\n" +
			"The log tool's log_path and summary_path must resolve (after links) inside the worktree or the store,\n" +
			"or a directory given with --allow-path; anything else is refused (exit 2).\n" +
			"Set-up: claude mcp add memorylab -- memorylab mcp",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "allow-path", Usage: "also let the log tool read files under `DIR` (repeatable)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("mcp takes no arguments, got %q", c.Args().First())
			}
			ops.MapCachesForLife(false) // a server outlives the cache files it reads
			allow, err := allowedDirs(env, c.StringSlice("allow-path"))
			if err != nil {
				return err
			}
			store := c.String("store")
			return newMCPServer(env, store, allow...).Run(c.Context, &lineTransport{in: env.In, out: env.Out})
		},
	}
}

// allowedDirs checks the --allow-path directories: each must exist and be
// a directory; they are returned absolute.
func allowedDirs(env *Env, dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		abs := env.abs(d)
		st, err := os.Stat(abs)
		if err != nil || !st.IsDir() {
			return nil, usagef("--allow-path %s: not a directory", d)
		}
		out = append(out, abs)
	}
	return out, nil
}

// CheckInput is the check tool's input: `memorylab check`'s flags.
type CheckInput struct {
	Description string   `json:"description" jsonschema:"what the planned experiment changes"`
	Tags        []string `json:"tags,omitempty" jsonschema:"tags, e.g. lr or architecture"`
	Family      string   `json:"family,omitempty" jsonschema:"experiment family, e.g. lr-sweep"`
	Hypothesis  string   `json:"hypothesis,omitempty" jsonschema:"what you expect and why"`
	Mode        string   `json:"mode,omitempty" jsonschema:"novelty policy: explore, exploit (default) or replicate"`
	Threshold   *float64 `json:"threshold,omitempty" jsonschema:"base similarity threshold 0..1 (default 0.62)"`
	Worktree    bool     `json:"worktree,omitempty" jsonschema:"also check the code: the working tree against HEAD (HEAD's own change when the tree is clean)"`
	Diff        *string  `json:"diff,omitempty" jsonschema:"also check the code of a revision whose own change is the idea, e.g. HEAD~1 (use worktree for the working tree)"`
}

// ParamsInput is the params tool's input: `memorylab params`'s arguments.
type ParamsInput struct {
	Names []string `json:"names,omitempty" jsonschema:"parameter names (all varied parameters when empty)"`
}

// LogInput is the log tool's input: `memorylab log`'s flags.
type LogInput struct {
	Description    string             `json:"description" jsonschema:"what the experiment changed"`
	Status         string             `json:"status,omitempty" jsonschema:"keep, discard or crash; omitted, it is decided as memorylab run does: crash without the primary metric, keep when it beats the champion by more than min_delta, else discard"`
	MinDelta       float64            `json:"min_delta,omitempty" jsonschema:"when status is omitted: keep only when the metric beats the champion by more than this (default 0)"`
	Tags           []string           `json:"tags,omitempty"`
	Family         string             `json:"family,omitempty"`
	Hypothesis     string             `json:"hypothesis,omitempty"`
	Notes          string             `json:"notes,omitempty"`
	Mode           string             `json:"mode,omitempty" jsonschema:"novelty policy for the stored verdict"`
	Metrics        map[string]float64 `json:"metrics,omitempty" jsonschema:"metrics NAME: VALUE; win over the log and summary"`
	LogPath        string             `json:"log_path,omitempty" jsonschema:"training output to read metrics or the crash from (default run.log when it exists); inside the worktree or the store"`
	SummaryPath    string             `json:"summary_path,omitempty" jsonschema:"JSON summary sidecar; inside the worktree or the store"`
	MetricPatterns map[string]string  `json:"metric_patterns,omitempty" jsonschema:"NAME: REGEX to extract a metric from the log"`
	Error          string             `json:"error,omitempty" jsonschema:"crash summary to record"`
	Items          string             `json:"items,omitempty" jsonschema:"per-item outcomes, JSONL {id, score or correct, group} (memorylab log --items); inside the worktree or the store; archived with the run"`
	Seed           *int64             `json:"seed,omitempty" jsonschema:"the training seed, recorded; runs of the same code and config are one replicate group whatever their seeds"`
	Config         string             `json:"config,omitempty" jsonschema:"the configuration the code ran with when it is not in the code (free text; separates replicate groups)"`
}

// ReportInput is the report tool's input.
type ReportInput struct {
	SinceHours float64 `json:"since_hours,omitempty" jsonschema:"report window in hours (default 16)"`
	Markdown   bool    `json:"markdown,omitempty" jsonschema:"return the markdown report instead of JSON"`
}

// ListInput is the list tool's input: `memorylab list`'s filters.
type ListInput struct {
	Status []string `json:"status,omitempty" jsonschema:"keep, discard and/or crash"`
	Family string   `json:"family,omitempty"`
	Since  string   `json:"since,omitempty" jsonschema:"only runs of the last DURATION, e.g. 90m or 16h"`
	Limit  int      `json:"limit,omitempty" jsonschema:"at most N runs, the most recent"`
}

// BestInput is the best tool's input.
type BestInput struct {
	N int `json:"n,omitempty" jsonschema:"how many of the best runs (default 5)"`
}

// RunInput names one run: an id, an id prefix, a commit, latest, previous or champion.
type RunInput struct {
	Run string `json:"run" jsonschema:"run id or prefix, commit, latest, previous or champion"`
}

// CompareInput names two runs.
type CompareInput struct {
	A      string `json:"a" jsonschema:"first run (id, prefix, commit, latest, previous, champion)"`
	B      string `json:"b" jsonschema:"second run"`
	NoDiff bool   `json:"no_diff,omitempty" jsonschema:"leave out the code diff"`
}

// Runs wraps list results (a JSON array in the CLI) in an object, as MCP
// structured output must be one.
type Runs struct {
	Runs []map[string]any `json:"runs"`
}

// mcpServer holds what the tool handlers share.
type mcpServer struct {
	env   *Env
	store string   // the global --store
	allow []string // --allow-path: more directories the log tool may read
	mu    sync.Mutex
}

// newMCPServer makes the server; allow are the --allow-path directories
// (absolute).
func newMCPServer(env *Env, store string, allow ...string) *mcp.Server {
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "memorylab", Version: version}, &mcp.ServerOptions{
		Instructions: "memorylab is the research memory of this autoresearch loop. Before editing the code for an idea, " +
			"call check with its description: decision block means it was tried (see matches). After training, " +
			"call log with the outcome (or run `memorylab run --reset-on-discard -- <train>` in the shell). " +
			"Read report for the plateau verdict and the decision queue.",
	})
	m := &mcpServer{env: env, store: store, allow: allow}
	mcp.AddTool(s, &mcp.Tool{Name: "check", Description: "Novelty verdict for a planned idea (decision allow, caution or block; its nearest past runs). A block is a normal result."}, guard(m.check))
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "Record a finished run: outcome, metrics, crash summary; returns the stored record. Without a status it is decided from the metric against the champion, as memorylab run does."}, guard(m.log))
	mcp.AddTool(s, &mcp.Tool{Name: "report", Description: "The morning report: headline, champion, plateau verdict, decision queue (JSON, or markdown)."}, guard(m.report))
	mcp.AddTool(s, &mcp.Tool{Name: "list", Description: "Runs in (timestamp, run id) order, filtered."}, guard(m.list))
	mcp.AddTool(s, &mcp.Tool{Name: "best", Description: "The champion and the N best runs by the primary metric, best first: a run with replicates by its group's mean (n and sd in replicates), as the champion is judged."}, guard(m.best))
	mcp.AddTool(s, &mcp.Tool{Name: "show", Description: "One run: record, commit, pin and its code change."}, guard(m.show))
	mcp.AddTool(s, &mcp.Tool{Name: "params", Description: "The sweep memory: every parameter runs changed in the code, the values tried with outcomes and best metric, the champion's value and untried gaps."}, guard(m.params))
	mcp.AddTool(s, &mcp.Tool{Name: "compare", Description: "Two runs side by side: metrics, config and code differences; paired (item by item: McNemar or bootstrap CI and sign test, gained and lost ids, per group) when both runs have items."}, guard(m.compare))
	s.AddResource(&mcp.Resource{URI: "memorylab://report/latest", Name: "report", Title: "Morning report",
		Description: "The latest morning report (markdown)", MIMEType: "text/markdown"}, guardResource(m.reportResource))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "memorylab://runs/{run_id}", Name: "run",
		Description: "One run's record and code change (JSON, as `memorylab show --json`)", MIMEType: "application/json"}, guardResource(m.runResource))
	return s
}

// guard makes a panic in a tool call a tool error (exit 1, "internal
// error"): the server keeps serving (issue 24.8).
func guard[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		defer func() {
			if r := recover(); r != nil {
				var zero Out
				res, out, err = nil, zero, &toolError{code: ExitFailure, msg: ops.PanicError(r).Error()}
			}
		}()
		return h(ctx, req, in)
	}
}

// guardResource is guard for resource reads.
func guardResource(h mcp.ResourceHandler) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (res *mcp.ReadResourceResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = nil, ops.PanicError(r)
			}
		}()
		return h(ctx, req)
	}
}

// toolError is a failed operation: its message and the CLI's exit code.
type toolError struct {
	code int
	msg  string
}

func (e *toolError) Error() string {
	return fmt.Sprintf("%s (exit %d: %s)", e.msg, e.code, exitMeaning(e.code))
}

// do runs one operation with the server's environment (notes go to the
// server's stderr) and turns its error into a tool error. Operations run
// one at a time: go-git handles and caches are per call anyway, and an
// agent's calls are sequential.
func do[T any](m *mcpServer, op func(ops.Env) (T, error)) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, err := op(m.env.opsEnv(m.store))
	if err != nil {
		var zero T
		return zero, &toolError{code: exitCode(err), msg: mcpWords(err.Error())}
	}
	return out, nil
}

// structured re-reads v through its JSON: MCP's structured output is the
// operation's --json contract, not the Go value.
func structured(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

func idea(desc string, tags []string, family, hypothesis, mode string, threshold *float64) ops.Idea {
	i := ops.Idea{Description: desc, Tags: tags, Family: family, Hypothesis: hypothesis, Mode: mode, Threshold: ops.DefaultThreshold}
	if threshold != nil {
		i.Threshold = *threshold
	}
	return i
}

func (m *mcpServer) check(_ context.Context, _ *mcp.CallToolRequest, in CheckInput) (*mcp.CallToolResult, map[string]any, error) {
	res, err := do(m, func(env ops.Env) (*ops.CheckResult, error) {
		ci := ops.CheckInput{Idea: idea(in.Description, in.Tags, in.Family, in.Hypothesis, in.Mode, in.Threshold), Limit: ops.DefaultMatches,
			RecordAs: ops.BlockedByMCP}
		switch {
		case in.Worktree && in.Diff != nil && *in.Diff != "":
			return nil, ledger.BadInputf("worktree and diff %q both name the code to check: pass one", *in.Diff)
		case in.Worktree:
			ci.Diff = ops.DiffWorktree
		case in.Diff != nil:
			ci.Diff = *in.Diff
			if ci.Diff == "" { // the older spelling of worktree
				ci.Diff = ops.DiffWorktree
			}
		}
		return ops.Check(env, ci)
	})
	if err != nil {
		return nil, nil, err
	}
	out, err := structured(res)
	return nil, out, err
}

func (m *mcpServer) params(_ context.Context, _ *mcp.CallToolRequest, in ParamsInput) (*mcp.CallToolResult, map[string]any, error) {
	res, err := do(m, func(env ops.Env) (*ops.ParamsResult, error) { return ops.Params(env, ops.ParamsInput{Names: in.Names}) })
	if err != nil {
		return nil, nil, err
	}
	out, err := structured(res)
	return nil, out, err
}

func (m *mcpServer) log(_ context.Context, _ *mcp.CallToolRequest, in LogInput) (*mcp.CallToolResult, map[string]any, error) {
	li := ops.LogInput{Idea: idea(in.Description, in.Tags, in.Family, in.Hypothesis, in.Mode, nil), Status: in.Status,
		Notes: in.Notes, LogPath: in.LogPath, SummaryPath: in.SummaryPath, Metrics: in.Metrics, ErrorText: in.Error,
		ItemsPath: in.Items, Seed: in.Seed, Config: in.Config,
		// Paths from an agent: only inside the worktree, the store and --allow-path.
		Paths: ops.PathPolicy{Confined: true, Allow: m.allow}}
	for _, k := range sortedKeys(in.MetricPatterns) {
		li.Patterns = append(li.Patterns, k+"="+in.MetricPatterns[k])
	}
	res, err := do(m, func(env ops.Env) (*ops.LogResult, error) {
		li, err := ops.DecideLog(env, li, in.MinDelta)
		if err != nil {
			return nil, err
		}
		return ops.Log(env, li)
	})
	if err != nil {
		return nil, nil, err
	}
	out, err := structured(res.Record)
	return nil, out, err
}

func (m *mcpServer) reportInput(sinceHours float64) ops.ReportInput {
	in := ops.DefaultReportInput()
	if sinceHours != 0 {
		in.SinceHours = sinceHours
	}
	return in
}

func (m *mcpServer) report(_ context.Context, _ *mcp.CallToolRequest, in ReportInput) (*mcp.CallToolResult, map[string]any, error) {
	if in.Markdown {
		md, err := m.markdownReport(in.SinceHours)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: md}}}, map[string]any{"markdown": md}, nil
	}
	ri := m.reportInput(in.SinceHours)
	ri.Format = "json"
	res, err := do(m, func(env ops.Env) (*ops.ReportResult, error) { return ops.Report(env, ri) })
	if err != nil {
		return nil, nil, err
	}
	var out map[string]any
	return nil, out, json.Unmarshal(res.Data, &out)
}

// markdownReport renders the markdown report without writing any file.
func (m *mcpServer) markdownReport(sinceHours float64) (string, error) {
	ri := m.reportInput(sinceHours)
	return do(m, func(env ops.Env) (string, error) {
		s, _, err := env.Open()
		if err != nil {
			return "", err
		}
		mo, err := ops.Morning(env, s, ri)
		if err != nil {
			return "", err
		}
		return string(mo.Markdown()), nil
	})
}

func (m *mcpServer) runs(in ops.ListInput) (Runs, error) {
	res, err := do(m, func(env ops.Env) (*ops.ListResult, error) { return ops.List(env, in) })
	if err != nil {
		return Runs{}, err
	}
	b, err := json.Marshal(res.Items)
	if err != nil {
		return Runs{}, err
	}
	out := Runs{Runs: []map[string]any{}}
	return out, json.Unmarshal(b, &out.Runs)
}

func (m *mcpServer) list(_ context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, Runs, error) {
	li := ops.ListInput{Status: in.Status, Family: in.Family, Limit: in.Limit}
	if in.Since != "" {
		d, err := ops.ParseSince(in.Since)
		if err != nil {
			return nil, Runs{}, &toolError{code: exitCode(err), msg: mcpWords(err.Error())}
		}
		li.Since = d
	}
	out, err := m.runs(li)
	return nil, out, err
}

func (m *mcpServer) best(_ context.Context, _ *mcp.CallToolRequest, in BestInput) (*mcp.CallToolResult, Runs, error) {
	n := in.N
	if n == 0 {
		n = 5
	}
	out, err := m.runs(ops.ListInput{Best: n})
	return nil, out, err
}

func (m *mcpServer) showRun(run string) (*ops.ShowResult, error) {
	return do(m, func(env ops.Env) (*ops.ShowResult, error) { return ops.Show(env, ops.ShowInput{Run: run}) })
}

func (m *mcpServer) show(_ context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, map[string]any, error) {
	res, err := m.showRun(in.Run)
	if err != nil {
		return nil, nil, err
	}
	out, err := structured(res)
	return nil, out, err
}

func (m *mcpServer) compare(_ context.Context, _ *mcp.CallToolRequest, in CompareInput) (*mcp.CallToolResult, map[string]any, error) {
	res, err := do(m, func(env ops.Env) (*report.Comparison, error) {
		return ops.Compare(env, ops.CompareInput{A: in.A, B: in.B, NoDiff: in.NoDiff})
	})
	if err != nil {
		return nil, nil, err
	}
	out, err := structured(res)
	return nil, out, err
}

func (m *mcpServer) reportResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	md, err := m.markdownReport(0)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: md}}}, nil
}

func (m *mcpServer) runResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, ok := strings.CutPrefix(req.Params.URI, "memorylab://runs/")
	if !ok || id == "" || strings.ContainsAny(id, "/?#") {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	res, err := m.showRun(id)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b) + "\n"}}}, nil
}

// mcpArgs maps the command line's flags, as the operations' messages name
// them, to the tools' argument names: an agent calling a tool is told to
// pass log_path, not --log (issue 31.7). A placeholder after the flag (FILE)
// goes with it.
var mcpArgs = map[string]string{
	"log": "log_path", "summary": "summary_path", "metric-pattern": "metric_patterns", "metric": "metrics",
	"status": "status", "error": "error", "description": "description", "tags": "tags", "family": "family",
	"hypothesis": "hypothesis", "notes": "notes", "mode": "mode", "threshold": "threshold", "diff": "diff",
	"min-delta": "min_delta", "since-hours": "since_hours", "since": "since", "limit": "limit", "best": "n",
	"no-diff": "no_diff",
}

var cliFlagRE = regexp.MustCompile(`--([a-z][a-z-]*)( FILE(\.json)?)?\b`)

// mcpWords rewrites an operation's message in the tools' vocabulary.
func mcpWords(msg string) string {
	return cliFlagRE.ReplaceAllStringFunc(msg, func(flag string) string {
		name := cliFlagRE.FindStringSubmatch(flag)[1]
		if arg, ok := mcpArgs[name]; ok {
			return arg
		}
		return flag
	})
}
