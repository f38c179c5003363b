package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/memorylab/memorylab/ledger"
)

// newProgress returns the reporter for long operations (a first push or
// pull, a big fold): a bar on stderr — what it is doing, done/total, rate,
// time left — only when stderr is a terminal and the output is not JSON;
// nil (nothing at all) otherwise, so scripts and agents see no extra bytes.
// Every long operation goes through this one helper.
func newProgress(env *Env, jsonOut bool) ledger.Progress {
	f, ok := env.Err.(*os.File)
	if jsonOut || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return barProgress{w: f}
}

// barProgress draws with github.com/schollz/progressbar/v3.
type barProgress struct{ w io.Writer }

func (p barProgress) Start(what string, total int) ledger.Step {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100e6), // 100 ms between redraws
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	}
	if total <= 0 {
		return barStep{progressbar.NewOptions(-1, append(opts, progressbar.OptionSpinnerType(14))...)}
	}
	return barStep{progressbar.NewOptions(total, append(opts, progressbar.OptionShowIts())...)}
}

type barStep struct{ b *progressbar.ProgressBar }

func (s barStep) Set(done int) { _ = s.b.Set(done) }
func (s barStep) Done()        { _ = s.b.Finish() }
