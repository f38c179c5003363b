// Package runlog reads what a training run leaves behind: the tail of its
// run.log, the summary block autoresearch prints after "---", a JSON
// summary sidecar, the crash summary of a traceback, --metric-pattern
// extraction, and the per-step training curve. It holds the one metric
// precedence (sidecar, else summary block; then patterns; then explicit
// values) that `log` and `run` both use.
//
// It reads files through ledger.Input (so a path cannot leave its root)
// and returns values; it never writes the store, the repository or a file.
package runlog
