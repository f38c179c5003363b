package share

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/internal/gitserve"
)

// BenchmarkSwarmTable (issue 29.4) prints the table: K machines
// (in-process clones), each doing 10 iterations of log then sync (pull,
// push) back to back, all through one remote, over a path, smart HTTP
// (git http-backend) and ssh (OpenSSH on 127.0.0.1). K comes from
// MEMORYLAB_SWARM_K (default 4,8,16,32,64), the transports from
// MEMORYLAB_SWARM_REMOTES (default path,http,ssh). Each sync starts
// without an ssh connection, as a `memorylab sync` process does (the
// clones share this process's connection pool otherwise).
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
	rows := []string{"| remote | K | syncs/s | sync p50 | p90 | max | push retries | syncs that gave up |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"}
	for i := 0; i < b.N; i++ {
		for _, kind := range kinds {
			for _, k := range ks {
				var remote string
				switch kind {
				case "path":
					remote = newBareRemote(b)
				case "http":
					remote = gitserve.SmartHTTP(b)
				case "ssh":
					remote = gitserve.SSH(b)
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
				began := time.Now()
				var wg sync.WaitGroup
				for j, c := range clones {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := 0; n < iterations; n++ {
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
				sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
				q := func(p float64) time.Duration { return durs[min(len(durs)-1, int(p*float64(len(durs))))] }
				rows = append(rows, fmt.Sprintf("| %s | %d | %.1f | %.2f s | %.2f s | %.2f s | %d | %d |", kind, k,
					float64(len(durs))/wall.Seconds(), q(0.5).Seconds(), q(0.9).Seconds(), durs[len(durs)-1].Seconds(), retries, gaveUp))
				if firstErr != nil {
					b.Logf("%s K=%d: first failed sync: %v", kind, k, firstErr)
				}
			}
		}
	}
	fmt.Println(strings.Join(rows, "\n"))
}
