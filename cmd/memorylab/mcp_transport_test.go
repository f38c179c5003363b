package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// mcpReply is one line the server wrote: a response or an error.
type mcpReply struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// badMCPLines are malformed messages and the answer each must get
// (issue 24 item 12): an error with this code and id, and the server goes on.
var badMCPLines = []struct {
	name, line string
	code       int64
	id         any
}{
	{"not JSON", `{not json`, -32700, nil},
	{"torn object", `{"jsonrpc":"2.0","id":3,"method":"pi`, -32700, nil},
	{"two values on a line", `{"jsonrpc":"2.0","id":4,"method":"ping"}{"x":1}`, -32700, nil},
	{"batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, -32600, nil},
	{"empty batch", `[]`, -32600, nil},
	{"a string", `"ping"`, -32600, nil},
	{"null", `null`, -32600, nil},
	{"a number", `42`, -32600, nil},
	{"wrong version", `{"jsonrpc":"1.0","id":6,"method":"ping"}`, -32600, float64(6)},
	{"no version", `{"id":"seven","method":"ping"}`, -32600, "seven"},
	{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, nil},
	{"neither request nor response", `{"jsonrpc":"2.0"}`, -32600, nil},
	{"method not a string", `{"jsonrpc":"2.0","id":8,"method":1}`, -32600, float64(8)},
}

// TestMCPSurvivesBadMessages drives the real `memorylab mcp` process with
// raw bytes: after an initialize, every malformed line of badMCPLines and a
// line over the 16 MiB limit, each answered with its JSON-RPC error, the
// server still answers ping and tools/list, and exits 0 at the end of input.
// (A request still in flight at the end of input is cancelled, as with the
// SDK's own transport: a client waits for its answers before closing.)
func TestMCPSurvivesBadMessages(t *testing.T) {
	repo := experimentRepo(t)
	cmd := child(t, repo.Dir, nil, "mcp")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	replies := make(chan mcpReply, 64)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r mcpReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			replies <- r
		}
	}()
	next := func(what string) mcpReply {
		t.Helper()
		select {
		case r, ok := <-replies:
			if !ok {
				t.Fatalf("%s: the server closed stdout (stderr: %s)", what, stderr.String())
			}
			return r
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer in 30 s", what)
		}
		return mcpReply{}
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write %.60q: %v (stderr: %s)", line, err, stderr.String())
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if r := next("initialize"); r.Error != nil || r.ID != float64(1) {
		t.Fatalf("initialize: %+v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// After initialize the SDK's own transport also refuses batches by ending the session.
	over := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("a", mcpMaxLine) + `"}}`
	cases := append(badMCPLines[:len(badMCPLines):len(badMCPLines)], struct {
		name, line string
		code       int64
		id         any
	}{"over the line limit", over, -32600, nil})
	for _, tc := range cases {
		send(tc.line)
		r := next(tc.name)
		if r.Error == nil || r.Error.Code != tc.code || r.ID != tc.id || r.Error.Message == "" {
			t.Errorf("%s: got %+v (error %+v), want code %d id %v", tc.name, r, r.Error, tc.code, tc.id)
		}
		send(`  `) // blank lines are skipped without an answer
		send(`{"jsonrpc":"2.0","id":"alive","method":"ping"}`)
		if r := next(tc.name + ": ping"); r.Error != nil || r.ID != "alive" {
			t.Fatalf("%s: ping after it: %+v", tc.name, r)
		}
	}
	send(`{"jsonrpc":"2.0","id":99,"method":"tools/list"}`)
	r := next("tools/list")
	var tools struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if r.ID != float64(99) || json.Unmarshal(r.Result, &tools) != nil || len(tools.Tools) != 8 {
		t.Fatalf("tools/list: %+v", r)
	}
	// A torn last line at the end of input ends the session quietly.
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":100,"meth`); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	for r := range replies {
		if r.Error == nil || r.Error.Code != -32700 {
			t.Errorf("after the end of input: %+v", r)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v (stderr: %s)", err, stderr.String())
	}
}

// TestMCPLineReader: readLine holds at most max bytes of a line, reads a
// longer one through and reports it, and keeps the lines around it whole.
func TestMCPLineReader(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 100) + "\n" + strings.Repeat("y", 10) + "\r\nlast"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	type got struct {
		line    string
		tooLong bool
		eof     bool
	}
	want := []got{{"short", false, false}, {"", true, false}, {strings.Repeat("y", 10) + "\r", false, false}, {"last", false, true}}
	for i, w := range want {
		line, tooLong, err := readLine(br, 10+1)
		if g := (got{string(line), tooLong, errors.Is(err, io.EOF)}); g != w {
			t.Fatalf("line %d: got %+v, want %+v (err %v)", i, g, w, err)
		}
	}
}

// FuzzMCPLine: any line either decodes into a message or gets a JSON-RPC
// error code of -32700 or -32600, never a panic.
func FuzzMCPLine(f *testing.F) {
	for _, tc := range badMCPLines {
		f.Add([]byte(tc.line))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, code, id, why := decodeLine(line)
		switch code {
		case 0:
			if msg == nil {
				t.Fatalf("%q: no message and no error", line)
			}
		case -32700, -32600:
			if msg != nil || why == "" {
				t.Fatalf("%q: code %d with message %v, why %q", line, code, msg, why)
			}
			switch id.(type) {
			case nil, string, float64:
			default:
				t.Fatalf("%q: id %T", line, id)
			}
		default:
			t.Fatalf("%q: code %d", line, code)
		}
	})
}
