package ledger

// Progress reports a long operation (a first push or pull, a cache build on
// a big ledger). The front-end decides whether to draw anything: cmd draws
// a bar on a terminal and nothing otherwise.
type Progress interface {
	// Start begins a step described by what, with total units (0 when
	// unknown), and returns the step's tracker.
	Start(what string, total int) Step
}

// Step is one tracked step of a Progress.
type Step interface {
	Set(done int) // units done so far
	Done()        // the step finished (or failed)
}

// ProgressMinBytes is the ledger size from which a cache build reports
// progress (about 2,000 runs: a second or so of work).
var ProgressMinBytes int64 = 4 << 20

// TestSetProgressMinBytes sets ProgressMinBytes and returns a restore func.
func TestSetProgressMinBytes(n int64) func() {
	old := ProgressMinBytes
	ProgressMinBytes = n
	return func() { ProgressMinBytes = old }
}

type NoProgress struct{}

func (NoProgress) Start(string, int) Step { return noStep{} }

// NoStep reports nothing.
type NoStep = noStep

type noStep struct{}

func (noStep) Set(int) {}
func (noStep) Done()   {}
