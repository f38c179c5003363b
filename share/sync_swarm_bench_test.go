package share

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/gitwire"
	"github.com/memorylab/memorylab/internal/gitserve"
)

// BenchmarkSwarmTable (issue 29.4) prints the table: K machines
// (in-process clones), each doing 10 iterations of log then sync (pull,
// push) back to back, all through one remote, over a path, smart HTTP
// (git http-backend) and ssh (OpenSSH on 127.0.0.1). K comes from
// MEMORYLAB_SWARM_K (default 4,8,16,32,64), the transports from
// MEMORYLAB_SWARM_REMOTES (default path,http,ssh). Each sync starts
// without an ssh connection, as a `memorylab sync` process does (the
// clones share this process's connection pool otherwise). Besides the
// issue's columns it prints the CPU per sync (the clients', the server's and
// git's together, divided by the syncs: each sync's log included), the
// server's part of it (sshd and git, or git http-backend; 0 over a path,
// whose remote side runs in this process) and the
// packs each clone holds at the end.
//
// MEMORYLAB_SWARM_SERVER_GIT (e.g. "receive.unpackLimit=1", several
// separated by commas) sets git config for the ssh server's git commands
// only, through sshd's SetEnv (GIT_CONFIG_COUNT/KEY/VALUE), not the
// machine's global git config.
//
//	go test ./share -run '^$' -bench SwarmTable -benchtime 1x
func BenchmarkSwarmTable(b *testing.B) {
	ks := []int{4, 8, 16, 32, 64}
	if v := os.Getenv("MEMORYLAB_SWARM_K"); v != "" {
		ks = nil
		for _, f := range strings.Split(v, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k < 1 {
				b.Fatalf("MEMORYLAB_SWARM_K: %q is not a list of machine counts", v)
			}
			ks = append(ks, k)
		}
	}
	kinds := []string{"path", "http", "ssh"}
	if v := os.Getenv("MEMORYLAB_SWARM_REMOTES"); v != "" {
		kinds = strings.Split(v, ",")
	}
	const iterations = 10
	rows := []string{"| remote | K | syncs/s | sync p50 | p90 | max | push retries | syncs that gave up | CPU per sync | of which the server's | packs per clone |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"}
	for i := 0; i < b.N; i++ {
		for _, kind := range kinds {
			for _, k := range ks {
				var remote string
				serverCPU := func() time.Duration { return 0 } // outside this process and its children
				switch kind {
				case "path":
					remote = newBareRemote(b)
				case "http":
					remote = gitserve.SmartHTTP(b)
				case "ssh":
					srv := gitserve.SSHServer(b, serverGitConfig(b)...)
					remote = srv.URL
					serverCPU = func() time.Duration {
						d, err := srv.CPU()
						if err != nil {
							b.Fatal(err)
						}
						return d
					}
				default:
					b.Fatalf("unknown remote kind %q", kind)
				}
				start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
				clones := make([]*syncClone, k)
				dirs := make([]string, k)
				for j := range clones {
					clones[j] = newSyncClone(b, fmt.Sprintf("m%02d", j), remote, start.Add(time.Duration(j)*time.Millisecond))
					g, err := gitrepo.OpenRepo(clones[j].repo.Dir)
					if err != nil {
						b.Fatal(err)
					}
					dirs[j] = g.CommonDir
				}
				var mu sync.Mutex
				var durs []time.Duration
				retries, gaveUp := 0, 0
				var firstErr error
				ctx := context.Background()
				self0 := selfCPU(b)
				cpu0 := processCPU(b) + serverCPU()
				began := time.Now()
				var wg sync.WaitGroup
				for j, c := range clones {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := 0; n < iterations; n++ {
							// The run's code is committed as its log
							// comes: after this machine's last push, as
							// in a lab (commit, train, log, sync), so a
							// walk by commit date stops at what the other
							// side holds.
							c.repo.When = c.clock
							c.logRun(b)
							t0 := time.Now()
							_, perr := c.sync(ctx, false)
							res, err := c.sync(ctx, true)
							d := time.Since(t0)
							sshConns.closeScope(dirs[j])
							mu.Lock()
							durs = append(durs, d)
							if perr != nil || err != nil {
								gaveUp++
								if firstErr == nil {
									firstErr = fmt.Errorf("pull: %v; push: %v", perr, err)
								}
							} else {
								retries += res.Attempts - 1
							}
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				wall := time.Since(began)
				// Everything the swarm used: the clients (this process), git
				// http-backend (its children) and sshd with what it reaped
				// (each connection closed after its sync). The steady figure
				// on a shared machine, where p50 and p90 move with the load.
				cpu := processCPU(b) + serverCPU() - cpu0
				server := max(0, cpu-(selfCPU(b)-self0))
				packs := 0
				for _, d := range dirs { // as a handle lists them: rolled packs aside
					dir := filepath.Join(d, "objects", "pack")
					ps, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
					for _, p := range ps {
						if !gitwire.IsRolled(gitwire.RolledNames(dir), filepath.Base(p)) {
							packs++
						}
					}
				}
				sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
				q := func(p float64) time.Duration { return durs[min(len(durs)-1, int(p*float64(len(durs))))] }
				rows = append(rows, fmt.Sprintf("| %s | %d | %.1f | %.2f s | %.2f s | %.2f s | %d | %d | %.3f s | %.3f s | %.1f |", kind, k,
					float64(len(durs))/wall.Seconds(), q(0.5).Seconds(), q(0.9).Seconds(), durs[len(durs)-1].Seconds(), retries, gaveUp,
					cpu.Seconds()/float64(len(durs)), server.Seconds()/float64(len(durs)), float64(packs)/float64(k)))
				if firstErr != nil {
					b.Logf("%s K=%d: first failed sync: %v", kind, k, firstErr)
				}
			}
		}
	}
	fmt.Println(strings.Join(rows, "\n"))
}

// serverGitConfig is the sshd config line that gives the ssh server's git
// the config of MEMORYLAB_SWARM_SERVER_GIT (none when it is unset): one
// SetEnv line, since sshd takes the first, with SHLVL=1 as gitserve sets it.
func serverGitConfig(b *testing.B) []string {
	v := os.Getenv("MEMORYLAB_SWARM_SERVER_GIT")
	if v == "" {
		return nil
	}
	env := []string{"SHLVL=1"}
	pairs := strings.Split(v, ",")
	for i, kv := range pairs {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" || strings.ContainsAny(kv, " \t\"") {
			b.Fatalf("MEMORYLAB_SWARM_SERVER_GIT: %q is not a list of key=value", v)
		}
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, k), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, val))
	}
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(pairs)))
	return []string{"SetEnv " + strings.Join(env, " ")}
}

// selfCPU is the user and system time of this process: the clients (and,
// over a path, the remote's side, served in-process).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is the user and system time of this process and of its
// children that have been waited for.
func processCPU(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}
