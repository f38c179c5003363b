package ops

import (
	"context"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/report"
	"github.com/memorylab/memorylab/share"
)

// swarmClaimsTimeout bounds the listing of the remote's claims a report
// makes: a report never waits long on the network.
const swarmClaimsTimeout = 3 * time.Second

// swarmSection is the report's "The swarm" (issue 29.6): runs by host from
// the records, each machine's last sync from the tracking refs the last
// sync left (no network), and, for a lab that syncs, the claims in flight
// on origin (listed with a short timeout; a failure is a note). hosts is
// every host's runs (report.Runs.Hosts), recent holds every run of the
// window.
func swarmSection(env Env, hosts map[string]report.HostRuns, recent []*ledger.Record, windowStart string) *report.Swarm {
	g, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return report.SwarmFrom(hosts, recent, windowStart, nil, nil)
	}
	repo := share.Of(g)
	machines, err := repo.MachineSyncs("")
	if err != nil || len(machines) == 0 {
		return report.SwarmFrom(hosts, recent, windowStart, nil, nil)
	}
	ctx, cancel := context.WithTimeout(env.ctx(), swarmClaimsTimeout)
	defer cancel()
	claims, err := repo.Claims(ctx, "", env.Now())
	if err != nil {
		env.notef("note: claims in flight unreadable: %v", err)
	}
	syncs := make([]report.SwarmSync, len(machines))
	for i, m := range machines {
		syncs[i] = report.SwarmSync{Machine: m.Machine, Tip: m.Tip, When: m.When}
	}
	var shown []report.SwarmClaim
	for _, c := range claims {
		shown = append(shown, report.SwarmClaim{Fingerprint: c.Fingerprint, Description: c.Description, Host: c.Host,
			PID: c.PID, Commit: c.Commit, Start: c.Start, Expires: c.Expires})
	}
	return report.SwarmFrom(hosts, recent, windowStart, syncs, shown)
}
