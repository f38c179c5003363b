package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memorylab/memorylab/internal/needtool"
)

// mcpEnv is the environment a test server runs its commands in.
func mcpEnv(dir string) *Env {
	return &Env{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Dir: dir,
		Now: time.Now, Getenv: func(string) string { return "" }}
}

// mcpSession connects an SDK client to a server over the in-memory transport.
func mcpSession(t *testing.T, dir string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := newMCPServer(mcpEnv(dir), "").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memorylab-test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its structured result; a tool error fails
// the test unless wantErr, when its text is returned instead.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, wantErr bool) (map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError != wantErr {
		t.Fatalf("%s %v: isError %v, want %v: %s", tool, args, res.IsError, wantErr, text)
	}
	out := map[string]any{}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out, text
}

func TestMCPTools(t *testing.T) {
	repo := experimentRepo(t)
	cs := mcpSession(t, repo.Dir)
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s lacks a schema or description", tool.Name)
		}
	}
	sort.Strings(names)
	equals(t, "best,check,compare,list,log,params,report,show", strings.Join(names, ","))

	rec, _ := call(t, cs, "log", map[string]any{"description": "baseline", "status": "keep", "tags": []string{"baseline"},
		"metrics": map[string]any{"val_bpb": 0.99}}, false)
	base, _ := rec["run_id"].(string)
	if base == "" || rec["status"] != "keep" {
		t.Fatalf("log returned %v", rec)
	}
	call(t, cs, "log", map[string]any{"description": "switch to GeLU", "status": "discard", "metrics": map[string]any{"val_bpb": 1.01}}, false)

	// A repeated idea is blocked: a normal result, not an error.
	v, _ := call(t, cs, "check", map[string]any{"description": "baseline", "tags": []string{"baseline"}}, false)
	if p, _ := v["policy"].(map[string]any); p["decision"] != "block" || v["classification"] != "duplicate_run" {
		t.Errorf("repeat: %v", v)
	}
	v, _ = call(t, cs, "check", map[string]any{"description": "rotary embeddings with base 200K", "tags": []string{"rope"}}, false)
	if p, _ := v["policy"].(map[string]any); p["decision"] == "block" {
		t.Errorf("new idea blocked: %v", v)
	}

	runs, _ := call(t, cs, "list", map[string]any{}, false)
	if rs, _ := runs["runs"].([]any); len(rs) != 2 {
		t.Errorf("list: %v", runs)
	}

	// Code: a change already run is duplicate_code whatever its wording,
	// and params remembers the values tried (issue 16).
	if _, err := repo.Commit("raise matrix LR", map[string]string{"train.py": strings.Replace(trainPy, "0.04", "0.06", 1)}); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "log", map[string]any{"description": "raise matrix LR", "status": "discard", "metrics": map[string]any{"val_bpb": 1.0}}, false)
	v, _ = call(t, cs, "check", map[string]any{"description": "Muon learning rate up a notch", "diff": ""}, false)
	code, _ := v["code"].(map[string]any)
	if dups, _ := code["duplicate_code"].([]any); len(dups) != 1 || v["policy"].(map[string]any)["decision"] != "block" {
		t.Errorf("check with diff: %v", v)
	}
	sw, _ := call(t, cs, "params", map[string]any{"names": []string{"MATRIX_LR"}}, false)
	if ps, _ := sw["parameters"].([]any); len(ps) != 1 || ps[0].(map[string]any)["name"] != "MATRIX_LR" {
		t.Errorf("params: %v", sw)
	}
	call(t, cs, "params", map[string]any{"names": []string{"NOPE"}}, true)
	if err := repo.ResetHardToParent(); err != nil {
		t.Fatal(err)
	}
	best, _ := call(t, cs, "best", map[string]any{"n": 1}, false)
	if rs, _ := best["runs"].([]any); len(rs) != 1 || rs[0].(map[string]any)["run_id"] != base {
		t.Errorf("best: %v", best)
	}
	shown, _ := call(t, cs, "show", map[string]any{"run": base}, false)
	if r, _ := shown["record"].(map[string]any); r["run_id"] != base {
		t.Errorf("show: %v", shown)
	}
	cmp, _ := call(t, cs, "compare", map[string]any{"a": "champion", "b": "latest", "no_diff": true}, false)
	if len(cmp) == 0 {
		t.Errorf("compare returned nothing")
	}
	rep, _ := call(t, cs, "report", map[string]any{"since_hours": 24}, false)
	if rep["metric"] != "val_bpb" || rep["plateau"] == nil {
		t.Errorf("report: keys %v", rep)
	}
	md, text := call(t, cs, "report", map[string]any{"markdown": true}, false)
	if !strings.HasPrefix(text, "# ") || md["markdown"] != text {
		t.Errorf("markdown report: %.80q", text)
	}

	// Bad input: the CLI's message and exit-code meaning, as a tool error.
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"log", map[string]any{"description": "x", "status": "pwn", "metrics": map[string]any{"val_bpb": 1}}, "exit 2: bad usage or input"},
		{"show", map[string]any{"run": "zzzz"}, "exit 2"},
		{"check", map[string]any{"description": "x", "mode": "yolo"}, "mode"},
		{"report", map[string]any{"since_hours": -3}, "since_hours must be"},
	} {
		if _, text := call(t, cs, tc.tool, tc.args, true); !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: error %q lacks %q", tc.tool, tc.args, text, tc.want)
		}
	}
	// Arguments that do not fit the schema never reach a command.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Arguments: map[string]any{"status": "keep"}}); err == nil && !res.IsError {
		t.Errorf("log without a description accepted")
	}

	// Resources: the morning report and a run by id.
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memorylab://report/latest"})
	if err != nil || len(r.Contents) != 1 || !strings.HasPrefix(r.Contents[0].Text, "# ") {
		t.Errorf("report resource: %v %v", err, r)
	}
	r, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memorylab://runs/" + base})
	if err != nil || len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, base) {
		t.Errorf("run resource: %v %v", err, r)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memorylab://runs/../../etc"}); err == nil {
		t.Errorf("a path in a run resource was read")
	}
}

// TestMCPConcurrentCalls: calls in parallel, logs among them, all answered;
// every log lands once.
func TestMCPConcurrentCalls(t *testing.T) {
	repo := experimentRepo(t)
	cs := mcpSession(t, repo.Dir)
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 8 {
		wg.Add(3)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "log", Arguments: map[string]any{
				"description": fmt.Sprintf("idea %d", i), "status": "discard", "metrics": map[string]any{"val_bpb": 1 + float64(i)/100}}})
			if err == nil && res.IsError {
				err = fmt.Errorf("log %d: %v", i, res.Content)
			}
			errs <- err
		}()
		for tool, args := range map[string]map[string]any{"check": {"description": "idea"}, "list": {"limit": 3}} {
			go func() {
				defer wg.Done()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
				if err == nil && res.IsError {
					err = fmt.Errorf("%s: %v", tool, res.Content)
				}
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	equals(t, 8, len(records(t, repo.Dir)))
}

// TestMCPStdio runs `memorylab mcp` as a real subprocess (this test binary
// as memorylab) and talks to it over stdin/stdout with the SDK's client.
func TestMCPStdio(t *testing.T) {
	repo := experimentRepo(t)
	cmd := child(t, repo.Dir, nil, "mcp")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memorylab-test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if init := cs.InitializeResult(); init == nil || init.ServerInfo.Name != "memorylab" || init.Instructions == "" {
		t.Fatalf("initialize: %+v", init)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 8 {
		t.Fatalf("tools: %v %v", err, tools)
	}
	rec, _ := call(t, cs, "log", map[string]any{"description": "baseline", "status": "keep", "metrics": map[string]any{"val_bpb": 0.99}}, false)
	v, _ := call(t, cs, "check", map[string]any{"description": "baseline"}, false)
	if p, _ := v["policy"].(map[string]any); p["decision"] != "block" || rec["run_id"] == nil {
		t.Errorf("stdio: log %v, check %v", rec, v)
	}
	if _, text := call(t, cs, "log", map[string]any{"description": "x", "status": "pwn"}, true); !strings.Contains(text, "exit 2") {
		t.Errorf("stdio bad input: %q", text)
	}
	cs.Close()
	_ = cmd.Wait()
	if strings.Contains(stderr.String(), "panic") {
		t.Errorf("server stderr: %s", stderr.String())
	}
}

// TestMCPInspector drives the server with an independent client, the MCP
// Inspector's CLI mode (`npm install -g @modelcontextprotocol/inspector`,
// which .ci/run does): it lists the tools and calls check and log.
func TestMCPInspector(t *testing.T) {
	inspector := needtool.Path(t, needtool.Inspector)
	repo := experimentRepo(t)
	path := memorylabShim(t)
	store := filepath.Join(repo.Dir, "results", "memorylab")
	run := func(args ...string) string {
		t.Helper()
		all := append([]string{"--cli", "memorylab", "--", "--store", store, "mcp"}, args...)
		cmd := exec.Command(inspector, all...)
		cmd.Dir = repo.Dir
		cmd.Env = append(cmd.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("--method", "tools/list")
	for _, name := range []string{`"check"`, `"log"`, `"report"`, `"compare"`, `"params"`} {
		if !strings.Contains(out, name) {
			t.Errorf("tools/list lacks %s:\n%s", name, out)
		}
	}
	out = run("--method", "tools/call", "--tool-name", "log", "--tool-arg", "description=baseline", "--tool-arg", "status=keep",
		"--tool-arg", `metrics={"val_bpb": 0.99}`)
	if !strings.Contains(out, `run_id`) {
		t.Errorf("log through the inspector:\n%s", out)
	}
	out = run("--method", "tools/call", "--tool-name", "check", "--tool-arg", "description=baseline")
	if !strings.Contains(out, `"decision": "block"`) {
		t.Errorf("check through the inspector:\n%s", out)
	}
	out = run("--method", "tools/call", "--tool-name", "params")
	if !strings.Contains(out, `"parameters"`) || !strings.Contains(out, `"runs_with_code": 1`) {
		t.Errorf("params through the inspector:\n%s", out)
	}
	equals(t, 1, len(records(t, repo.Dir)))
}
