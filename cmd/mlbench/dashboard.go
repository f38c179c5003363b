package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// dashboardRowName names the dashboard row for -only.
const dashboardRowName = "dashboard first page"

// dashboardBench starts `memorylab serve` on the store and times, from the
// process start, until the first page (/) and its data (/api/overview) have
// both answered, then one more /api/overview (the page's refresh); the
// server's peak RSS is read when it is stopped (issue 30: the dashboard's
// first page under 100 ms, memory under 1 GB at 1M runs).
func dashboardBench(bin, dir, store string, n int) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	const token = "mlbench-token"
	cmd := exec.Command(bin, "--store", store, "serve", "--addr", addr, "--token", token)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	defer stop()
	client := &http.Client{Timeout: 10 * time.Minute}
	get := func(path string) error {
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return nil
	}
	for { // until the server listens
		if err := get("/"); err == nil {
			break
		} else if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("serve did not answer: %v: %s", err, stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := get("/api/overview"); err != nil {
		return err
	}
	first := time.Since(start)
	t := time.Now()
	if err := get("/api/overview"); err != nil {
		return err
	}
	again := time.Since(t)
	stop()
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Printf("| %d | %s (serve start to / and /api/overview answered; then /api/overview again: %s) | %s | %s | %s | %.1f MB |\n",
		n, dashboardRowName, ms(again), ms(first), ms(first), ms(cpu), float64(rss)/1024)
	return nil
}
