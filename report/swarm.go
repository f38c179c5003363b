package report

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// Swarm is "The swarm" (issue 29.6): the runs of each machine, each
// machine's last sync to the shared remote, and the claims in flight.
type Swarm struct {
	Hosts  []SwarmHost  `json:"hosts"`  // runs by the host that logged them, most runs in the window first
	Syncs  []SwarmSync  `json:"syncs"`  // each machine's ledger on the remote, last push first
	Claims []SwarmClaim `json:"claims"` // ideas in flight across the swarm, oldest first
}

// SwarmSync is one machine's ledger on the remote (ops fills it from
// share.MachineSync; report knows no git).
type SwarmSync struct {
	Machine string `json:"machine"`
	Tip     string `json:"tip"`
	When    string `json:"when"` // the commit time of the machine's ledger tip: its last push
}

// SwarmClaim is an idea in flight (ops fills it from share.Claim, without
// the token that names the holder for its renewals: not for display).
type SwarmClaim struct {
	Fingerprint string    `json:"fingerprint"`
	Description string    `json:"description"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Commit      string    `json:"commit,omitempty"`
	Start       time.Time `json:"start"`
	Expires     time.Time `json:"expires"`
}

// SwarmHost is one host's runs.
type SwarmHost struct {
	Host     string `json:"host"` // "" when the records do not say
	Runs     int    `json:"runs"`
	InWindow int    `json:"in_window"`
	Kept     int    `json:"kept_in_window"`
	LastRun  string `json:"last_run_utc"`
}

// SwarmOf builds the section; nil (no section) for a lab of one machine
// that never synced and has no claims in flight.
func SwarmOf(recs []ledger.Record, windowStart string, syncs []SwarmSync, claims []SwarmClaim) *Swarm {
	all := make([]*ledger.Record, len(recs))
	for i := range recs {
		all[i] = &recs[i]
	}
	return SwarmFrom(Records(recs).Hosts(), all, windowStart, syncs, claims)
}

// SwarmFrom is SwarmOf from each host's runs over every run (Runs.Hosts)
// and the runs that can be in the window (any superset of them, such as
// the runs from the window's start on).
func SwarmFrom(hosts map[string]HostRuns, recent []*ledger.Record, windowStart string, syncs []SwarmSync, claims []SwarmClaim) *Swarm {
	start, _ := time.Parse(time.RFC3339, windowStart)
	by := make(map[string]*SwarmHost, len(hosts))
	for host, hr := range hosts {
		by[host] = &SwarmHost{Host: host, Runs: hr.Runs, LastRun: hr.LastRun}
	}
	for _, r := range recent {
		if !ledger.AtOrAfter(r.Timestamp, windowStart, start) {
			continue
		}
		h := by[HostOf(r)]
		if h == nil { // not among hosts: a caller's bug; counted as seen
			h = &SwarmHost{Host: HostOf(r)}
			by[h.Host] = h
		}
		h.InWindow++
		if r.Status == ledger.StatusKeep {
			h.Kept++
		}
	}
	if len(by) <= 1 && len(syncs) == 0 && len(claims) == 0 {
		return nil
	}
	sw := &Swarm{Hosts: []SwarmHost{}, Syncs: syncs, Claims: []SwarmClaim{}}
	sw.Claims = append(sw.Claims, claims...)
	for _, h := range by {
		sw.Hosts = append(sw.Hosts, *h)
	}
	sort.Slice(sw.Hosts, func(i, j int) bool {
		a, b := sw.Hosts[i], sw.Hosts[j]
		if a.InWindow != b.InWindow {
			return a.InWindow > b.InWindow
		}
		if a.Runs != b.Runs {
			return a.Runs > b.Runs
		}
		return a.Host < b.Host
	})
	if sw.Syncs == nil {
		sw.Syncs = []SwarmSync{}
	}
	return sw
}

// writeSwarm is the markdown section (nothing when sw is nil).
func writeSwarm(b *bytes.Buffer, sw *Swarm) {
	if sw == nil {
		return
	}
	fmt.Fprintf(b, "\n## The swarm\n")
	fmt.Fprintf(b, "| host | runs in window | kept | runs | last run (UTC) |\n| --- | ---: | ---: | ---: | --- |\n")
	for _, h := range sw.Hosts {
		host := h.Host
		if host == "" {
			host = "(not recorded)"
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s |\n", cell(host), h.InWindow, h.Kept, h.Runs, cell(tableTime(h.LastRun)))
	}
	if len(sw.Syncs) > 0 {
		fmt.Fprintf(b, "\nLast syncs (each machine's ledger on the remote, as this clone last saw it):\n\n")
		fmt.Fprintf(b, "| machine | last push (UTC) |\n| --- | --- |\n")
		for _, s := range sw.Syncs {
			fmt.Fprintf(b, "| `%s` | %s |\n", code(s.Machine), cell(tableTime(s.When)))
		}
	}
	if len(sw.Claims) == 0 {
		fmt.Fprintf(b, "\nNo claims in flight.\n")
		return
	}
	fmt.Fprintf(b, "\nClaims in flight:\n\n| since (UTC) | host | expires (UTC) | idea |\n| --- | --- | --- | --- |\n")
	for _, c := range sw.Claims {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", cell(tableTime(c.Start.UTC().Format(time.RFC3339))), cell(c.Host),
			cell(tableTime(c.Expires.UTC().Format(time.RFC3339))), cell(c.Description))
	}
}
