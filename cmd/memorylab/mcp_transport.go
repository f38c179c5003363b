package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpMaxLine is the longest message line the MCP server reads: the SDK's
// default frame limit (mcp.DefaultMaxLineLength, 16 MiB), which is also the
// longest ledger line any reader accepts.
const mcpMaxLine = mcp.DefaultMaxLineLength

// lineTransport is `memorylab mcp`'s stdio transport: one JSON-RPC message
// per line, as the MCP stdio transport specifies (messages must not contain
// embedded newlines). It replaces the SDK's StdioTransport, whose reader
// ends the session, and with it the process (exit 1), on the first line that
// is not valid JSON, on a batch once the protocol version is 2025-06-18, and
// on a frame over the line limit (go-sdk v1.8.0, mcp/transport.go:
// newIOConnLimited returns after any decode error, and ioConn.Read's error
// closes the connection). Here a bad line is answered with a JSON-RPC error
// — -32700 for text that is not JSON, -32600 for JSON that is not one
// request or notification (a batch, an empty line of JSON, a wrong version
// tag, an ID that is neither a number nor a string, a line over the limit,
// read through in bounded memory) — and the server reads the next line.
type lineTransport struct {
	in      io.Reader
	out     io.Writer
	maxLine int // 0: mcpMaxLine
}

var _ mcp.Transport = (*lineTransport)(nil)

// Connect starts reading lines; the connection ends at the end of input.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.maxLine
	if max <= 0 {
		max = mcpMaxLine
	}
	c := &lineConn{out: t.out, incoming: make(chan lineMsg), closed: make(chan struct{})}
	go c.readLoop(t.in, max)
	return c, nil
}

// lineConn is one session over a lineTransport.
type lineConn struct {
	out      io.Writer
	writeMu  sync.Mutex // Write may be called concurrently
	incoming chan lineMsg
	closed   chan struct{}
	once     sync.Once
}

// lineMsg is a decoded message, or the error that ended the input.
type lineMsg struct {
	msg jsonrpc.Message
	err error
}

// readLoop reads the input line by line, answers bad lines itself and hands
// the good ones to Read. Like the SDK's reader it may outlive Close while a
// read of stdin blocks; it then returns at the next line or the end of input.
func (c *lineConn) readLoop(in io.Reader, max int) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(br, max)
		if tooLong {
			c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: message over %d bytes", max))
		} else if len(bytes.TrimSpace(line)) > 0 {
			msg, code, id, why := decodeLine(line)
			if code != 0 {
				c.writeError(id, code, why)
			} else if !c.deliver(lineMsg{msg: msg}) {
				return
			}
		}
		if err != nil {
			c.deliver(lineMsg{err: err})
			return
		}
	}
}

// deliver hands m to Read; false once the connection is closed.
func (c *lineConn) deliver(m lineMsg) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// readLine reads one line without its newline, holding at most max bytes: a
// longer line is read through to its end and reported as tooLong. err is the
// error that ended the input (io.EOF), with the last unterminated line.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // +1: the newline itself
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, rerr
	}
}

// decodeLine decodes one line into a message, or says why it cannot be one:
// a JSON-RPC error code, the request's ID when it has a usable one, and a
// message.
func decodeLine(line []byte) (msg jsonrpc.Message, code int64, id any, why string) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = errors.New("more than one JSON value on the line")
		}
		return nil, jsonrpc.CodeParseError, nil, "parse error: " + err.Error()
	}
	switch line[0] {
	case '[':
		return nil, jsonrpc.CodeInvalidRequest, nil, "invalid request: batches are not supported; send one message per line"
	case '{':
	default:
		return nil, jsonrpc.CodeInvalidRequest, nil, "invalid request: a message must be a JSON object"
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err == nil {
		return msg, 0, nil, ""
	}
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &probe) == nil {
		switch probe.ID.(type) {
		case string, float64:
			id = probe.ID
		}
	}
	return nil, jsonrpc.CodeInvalidRequest, id, "invalid request: " + err.Error()
}

// writeError answers a bad line. The response is written by hand because
// the SDK's encoder leaves out a null id, which JSON-RPC requires when the
// request's id cannot be read.
func (c *lineConn) writeError(id any, code int64, message string) {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	if err != nil {
		return
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, _ = c.out.Write(append(b, '\n'))
}

// Read returns the next good message; io.EOF at the end of input.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m.msg, m.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write writes one message as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.out.Write(append(b, '\n'))
	return err
}

// Close ends the session; stdin and stdout stay open (they are the process's).
func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// SessionID is empty: stdio has one session.
func (c *lineConn) SessionID() string { return "" }
