package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/web"
)

func serveCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "serve a live, read-only dashboard of the store in the browser",
		UsageText: "memorylab serve [--addr 127.0.0.1:8765] [--token T] [--open]",
		Description: "Serves the morning report's overview (headline, progress chart, plateau, decision queue,\n" +
			"champion board), the run in progress with its output, a paged, sortable and searchable table of\n" +
			"every run, each run with its verdict, packet, crash, run.log and code change, comparisons and\n" +
			"lineages. Pages update live (Server-Sent Events) when a run is logged, pulled or training.\n" +
			"It binds loopback unless --addr says otherwise; a non-loopback address needs --token (a random\n" +
			"one is made and printed when not given). Nothing it serves writes the store. Ctrl-C stops it.\n\n" +
			"Examples:\n   memorylab serve\n   memorylab serve --addr 0.0.0.0:8765 --token \"$(openssl rand -hex 16)\"",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8765", Usage: "address to listen on (host:port)"},
			&cli.StringFlag{Name: "token", Usage: "access token required on every request (required off loopback)"},
			&cli.BoolFlag{Name: "open", Usage: "open the dashboard in the default browser"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("serve takes no arguments, got %q", c.Args().First())
			}
			ops.MapCachesForLife(false) // a server outlives the cache files it reads
			return runServe(c.Context, env, c.String("store"), c.String("addr"), c.String("token"), c.Bool("open"))
		},
	}
}

func runServe(ctx context.Context, env *Env, store, addr, token string, open bool) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usagef("--addr must be host:port, got %q", addr)
	}
	oenv := env.opsEnv(store)
	if _, _, err := oenv.Open(); err != nil {
		return err
	}
	loopback := web.IsLoopbackAddr(addr)
	if !loopback && token == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		token = hex.EncodeToString(b[:])
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("unable to listen on %s: %w", addr, err)
	}
	srv := web.New(oenv, web.Options{Token: token, Loopback: loopback && token == ""})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Run(ctx)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}
	if token != "" {
		u.RawQuery = url.Values{"token": {token}}.Encode()
	}
	fmt.Fprintf(env.Out, "memorylab: dashboard at %s (Ctrl-C stops it)\n", u.String())
	if open {
		openBrowser(env, u.String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		fmt.Fprintln(env.Err, "memorylab: dashboard stopped")
		return nil // stopping is how a server ends
	}
}

// openBrowser asks the desktop to open u; failing is only a note.
func openBrowser(env *Env, u string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if err := exec.Command(name, u).Start(); err != nil {
		fmt.Fprintf(env.Err, "memorylab: note: unable to open a browser (%v); open %s yourself\n", err, u)
	}
}
