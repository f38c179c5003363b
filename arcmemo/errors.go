package arcmemo

import (
	"fmt"

	"github.com/memorylab/memorylab/ledger"
)

// badInput wraps ledger.ErrBadInput (exit code 2) with a message that names
// the file and the fix.
func badInput(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ledger.ErrBadInput, fmt.Sprintf(format, a...))
}
