package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"
)

// The MCP server is a front-end over the same operations as the command
// line: every tool call runs the command itself in-process (newApp, with
// its own buffers) with --json and returns that JSON, so a rule, a parser
// or a validation is never written twice, and the tools' results are the
// CLI's --json contracts field for field. Failures come back as tool
// errors carrying the command's one-line message and exit code.

func mcpCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve memorylab to a coding agent over the Model Context Protocol (stdio)",
		UsageText: "memorylab mcp",
		Description: "Runs an MCP server on stdin/stdout for the agent that drives the loop (Claude Code, Codex, …):\n" +
			"tools check, log, report, list, show, compare and best, whose arguments are the commands' flags and\n" +
			"whose results are their --json output; resources memorylab://report/latest (the morning report,\n" +
			"markdown) and memorylab://runs/{run_id}. Stdout carries only the protocol; diagnostics go to stderr.\n" +
			"Set-up: claude mcp add memorylab -- memorylab mcp",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("mcp takes no arguments, got %q", c.Args().First())
			}
			store := c.String("store")
			return newMCPServer(env, store).Run(c.Context, &mcp.StdioTransport{})
		},
	}
}

// CheckInput is the check tool's input: `memorylab check`'s flags.
type CheckInput struct {
	Description string   `json:"description" jsonschema:"what the planned experiment changes"`
	Tags        []string `json:"tags,omitempty" jsonschema:"tags, e.g. lr or architecture"`
	Family      string   `json:"family,omitempty" jsonschema:"experiment family, e.g. lr-sweep"`
	Hypothesis  string   `json:"hypothesis,omitempty" jsonschema:"what you expect and why"`
	Mode        string   `json:"mode,omitempty" jsonschema:"novelty policy: explore, exploit (default) or replicate"`
	Threshold   *float64 `json:"threshold,omitempty" jsonschema:"base similarity threshold 0..1 (default 0.62)"`
}

// LogInput is the log tool's input: `memorylab log`'s flags.
type LogInput struct {
	Description    string             `json:"description" jsonschema:"what the experiment changed"`
	Status         string             `json:"status" jsonschema:"keep, discard or crash"`
	Tags           []string           `json:"tags,omitempty"`
	Family         string             `json:"family,omitempty"`
	Hypothesis     string             `json:"hypothesis,omitempty"`
	Notes          string             `json:"notes,omitempty"`
	Mode           string             `json:"mode,omitempty" jsonschema:"novelty policy for the stored verdict"`
	Metrics        map[string]float64 `json:"metrics,omitempty" jsonschema:"metrics NAME: VALUE; win over the log and summary"`
	LogPath        string             `json:"log_path,omitempty" jsonschema:"training output to read metrics or the crash from (default run.log when it exists)"`
	SummaryPath    string             `json:"summary_path,omitempty" jsonschema:"JSON summary sidecar"`
	MetricPatterns map[string]string  `json:"metric_patterns,omitempty" jsonschema:"NAME: REGEX to extract a metric from the log"`
	Error          string             `json:"error,omitempty" jsonschema:"crash summary to record"`
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
	store string // the global --store, passed to every command
}

func newMCPServer(env *Env, store string) *mcp.Server {
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
	m := &mcpServer{env: env, store: store}
	mcp.AddTool(s, &mcp.Tool{Name: "check", Description: "Novelty verdict for a planned idea (decision allow/warn/block, its nearest past runs). A block is a normal result."}, m.check)
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "Record a finished run: outcome, metrics, crash summary; returns the stored record."}, m.log)
	mcp.AddTool(s, &mcp.Tool{Name: "report", Description: "The morning report: headline, champion, plateau verdict, decision queue (JSON, or markdown)."}, m.report)
	mcp.AddTool(s, &mcp.Tool{Name: "list", Description: "Runs in (timestamp, run id) order, filtered."}, m.list)
	mcp.AddTool(s, &mcp.Tool{Name: "best", Description: "The champion and the N best runs by the primary metric, best first."}, m.best)
	mcp.AddTool(s, &mcp.Tool{Name: "show", Description: "One run: record, commit, pin and its code change."}, m.show)
	mcp.AddTool(s, &mcp.Tool{Name: "compare", Description: "Two runs side by side: metrics, config and code differences."}, m.compare)
	s.AddResource(&mcp.Resource{URI: "memorylab://report/latest", Name: "report", Title: "Morning report",
		Description: "The latest morning report (markdown)", MIMEType: "text/markdown"}, m.reportResource)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "memorylab://runs/{run_id}", Name: "run",
		Description: "One run's record and code change (JSON, as `memorylab show --json`)", MIMEType: "application/json"}, m.runResource)
	return s
}

// toolError is a failed command: its message and exit code.
type toolError struct {
	code int
	msg  string
}

func (e *toolError) Error() string {
	return fmt.Sprintf("%s (exit %d: %s)", e.msg, e.code, exitMeaning(e.code))
}

// exitMeaning names an exit code as the README's table does.
func exitMeaning(code int) string {
	switch code {
	case ExitBadInput:
		return "bad usage or input"
	case ExitNoRepo:
		return "not a git repository, or no store"
	case ExitLocked:
		return "ledger locked"
	case ExitNotWritable:
		return "store not writable"
	case ExitInterrupted:
		return "interrupted"
	}
	return "failure"
}

// invoke runs one memorylab command in-process and returns its stdout.
func (m *mcpServer) invoke(args ...string) ([]byte, error) {
	var out, errb bytes.Buffer
	env := *m.env
	env.In, env.Out, env.Err = strings.NewReader(""), &out, &errb
	argv := []string{"memorylab"}
	if m.store != "" {
		argv = append(argv, "--store", m.store)
	}
	if code := runEnv(&env, append(argv, args...)); code != 0 {
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		msg := strings.TrimPrefix(lines[len(lines)-1], "memorylab: ")
		return nil, &toolError{code: code, msg: msg}
	}
	return out.Bytes(), nil
}

// invokeJSON runs a command (args[0]) with --json and decodes its output
// into v.
func (m *mcpServer) invokeJSON(v any, args ...string) error {
	out, err := m.invoke(append([]string{args[0], "--json"}, args[1:]...)...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("unable to read the command's JSON: %w", err)
	}
	return nil
}

func appendIdea(args []string, desc string, tags []string, family, hypothesis, mode string) []string {
	args = append(args, "--description", desc)
	if len(tags) > 0 {
		args = append(args, "--tags", strings.Join(tags, ","))
	}
	for _, f := range [][2]string{{"--family", family}, {"--hypothesis", hypothesis}, {"--mode", mode}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	return args
}

func (m *mcpServer) check(_ context.Context, _ *mcp.CallToolRequest, in CheckInput) (*mcp.CallToolResult, map[string]any, error) {
	args := appendIdea([]string{"check"}, in.Description, in.Tags, in.Family, in.Hypothesis, in.Mode)
	if in.Threshold != nil {
		args = append(args, "--threshold", strconv.FormatFloat(*in.Threshold, 'g', -1, 64))
	}
	var out map[string]any
	return nil, out, m.invokeJSON(&out, args...)
}

func (m *mcpServer) log(_ context.Context, _ *mcp.CallToolRequest, in LogInput) (*mcp.CallToolResult, map[string]any, error) {
	args := appendIdea([]string{"log", "--status", in.Status}, in.Description, in.Tags, in.Family, in.Hypothesis, in.Mode)
	for _, f := range [][2]string{{"--notes", in.Notes}, {"--log", in.LogPath}, {"--summary", in.SummaryPath}, {"--error", in.Error}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	for _, k := range sortedKeys(in.Metrics) {
		args = append(args, "--metric", k+"="+strconv.FormatFloat(in.Metrics[k], 'g', -1, 64))
	}
	for _, k := range sortedKeys(in.MetricPatterns) {
		args = append(args, "--metric-pattern", k+"="+in.MetricPatterns[k])
	}
	var out map[string]any
	return nil, out, m.invokeJSON(&out, args...)
}

func (m *mcpServer) report(_ context.Context, _ *mcp.CallToolRequest, in ReportInput) (*mcp.CallToolResult, map[string]any, error) {
	args := []string{"report"}
	if in.SinceHours != 0 {
		args = append(args, "--since-hours", strconv.FormatFloat(in.SinceHours, 'g', -1, 64))
	}
	if in.Markdown {
		md, err := m.markdownReport(args)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: md}}}, map[string]any{"markdown": md}, nil
	}
	var out map[string]any
	return nil, out, m.invokeJSON(&out, args...)
}

// markdownReport renders the markdown report into a temp file (report
// writes files; --output keeps the store's reports/ untouched) and reads it.
func (m *mcpServer) markdownReport(args []string) (string, error) {
	f, err := os.CreateTemp("", "memorylab-mcp-report-*.md")
	if err != nil {
		return "", err
	}
	f.Close()
	defer os.Remove(f.Name())
	if _, err := m.invoke(append(args, "--format", "md", "--output", f.Name())...); err != nil {
		return "", err
	}
	b, err := os.ReadFile(f.Name())
	return string(b), err
}

func (m *mcpServer) list(_ context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, Runs, error) {
	args := []string{"list"}
	if len(in.Status) > 0 {
		args = append(args, "--status", strings.Join(in.Status, ","))
	}
	if in.Family != "" {
		args = append(args, "--family", in.Family)
	}
	if in.Since != "" {
		args = append(args, "--since", in.Since)
	}
	if in.Limit != 0 {
		args = append(args, "--limit", strconv.Itoa(in.Limit))
	}
	out := Runs{Runs: []map[string]any{}}
	return nil, out, m.invokeJSON(&out.Runs, args...)
}

func (m *mcpServer) best(_ context.Context, _ *mcp.CallToolRequest, in BestInput) (*mcp.CallToolResult, Runs, error) {
	n := in.N
	if n == 0 {
		n = 5
	}
	out := Runs{Runs: []map[string]any{}}
	return nil, out, m.invokeJSON(&out.Runs, "list", "--best", strconv.Itoa(n))
}

func (m *mcpServer) show(_ context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, map[string]any, error) {
	var out map[string]any
	return nil, out, m.invokeJSON(&out, "show", "--", in.Run)
}

func (m *mcpServer) compare(_ context.Context, _ *mcp.CallToolRequest, in CompareInput) (*mcp.CallToolResult, map[string]any, error) {
	args := []string{"compare"}
	if in.NoDiff {
		args = append(args, "--no-diff")
	}
	var out map[string]any
	return nil, out, m.invokeJSON(&out, append(args, "--", in.A, in.B)...)
}

func (m *mcpServer) reportResource(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	md, err := m.markdownReport([]string{"report"})
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
	out, err := m.invoke("show", "--json", "--", id)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(out)}}}, nil
}
