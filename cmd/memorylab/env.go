package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ops"
)

// Env is what a command may touch of the outside world. Tests swap in
// buffers, a temp directory and a fixed clock instead of globals.
type Env struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	Dir    string                  // working directory
	Now    func() time.Time        // clock
	Getenv func(key string) string // environment
	// Ctx ends on Ctrl-C or SIGTERM (runEnv); nil in tests that call
	// commands directly.
	Ctx context.Context
	// Args is the command line as given (runEnv sets it): `run` checks
	// that its training command followed `--`.
	Args []string
}

// osEnv is the real process environment.
func osEnv() *Env {
	wd, _ := os.Getwd()
	return &Env{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Dir: wd, Now: time.Now, Getenv: os.Getenv}
}

// opsEnv is the environment operations run in: notes go to stderr.
func (env *Env) opsEnv(store string) ops.Env {
	return ops.Env{Dir: env.Dir, Store: store, Now: env.Now, Getenv: env.Getenv, Notice: env.Err, Ctx: env.Ctx}
}

// ops is opsEnv with the global --store of c, and a progress bar for
// long steps unless the command prints JSON.
func (env *Env) ops(c *cli.Context) ops.Env { return env.opsWith(c.String("store"), c.Bool("json")) }

// opsWith is opsEnv with a progress bar for long steps (a first index
// build) on a terminal, unless the command prints JSON.
func (env *Env) opsWith(store string, jsonOut bool) ops.Env {
	e := env.opsEnv(store)
	e.Progress = newProgress(env, jsonOut)
	return e
}

func (env *Env) abs(p string) string { return env.opsEnv("").Abs(p) }

// writeJSON writes v as indented JSON without HTML escaping: the --json
// contracts.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
