package main

import (
	"io"
	"os"
	"time"
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
}

// osEnv is the real process environment.
func osEnv() *Env {
	wd, _ := os.Getwd()
	return &Env{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Dir: wd, Now: time.Now, Getenv: os.Getenv}
}
