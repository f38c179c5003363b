package ops

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInternal is wrapped by the error a front end makes of a panic.
var ErrInternal = errors.New("internal error")

// PanicError turns a value recovered from a panic into a one-line error
// wrapping ErrInternal. Every front end recovers around each operation
// (the CLI around the command, MCP around each tool call, the dashboard
// around each request) and reports this error in its own terms (exit 1, a
// tool error, HTTP 500), so no input can end the MCP server, drop an HTTP
// connection or print a Go stack trace (issue 24.8).
func PanicError(r any) error {
	msg := strings.Join(strings.Fields(fmt.Sprint(r)), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return fmt.Errorf("%w: %s (a bug in memorylab: please report it with the command that caused it)", ErrInternal, msg)
}
