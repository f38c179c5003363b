package ops

import (
	"context"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/report"
)

// swarmClaimsTimeout bounds the listing of the remote's claims a report
// makes: a report never waits long on the network.
const swarmClaimsTimeout = 3 * time.Second

// swarmSection is the report's "The swarm" (issue 29.6): runs by host from
// the records, each machine's last sync from the tracking refs the last
// sync left (no network), and, for a lab that syncs, the claims in flight
// on origin (listed with a short timeout; a failure is a note).
func swarmSection(env Env, recs []ledger.Record, windowStart string) *report.Swarm {
	repo, err := ledger.OpenRepo(env.Dir)
	if err != nil {
		return report.SwarmOf(recs, windowStart, nil, nil)
	}
	syncs, err := repo.MachineSyncs("")
	if err != nil || len(syncs) == 0 {
		return report.SwarmOf(recs, windowStart, nil, nil)
	}
	ctx, cancel := context.WithTimeout(env.ctx(), swarmClaimsTimeout)
	defer cancel()
	claims, err := repo.Claims(ctx, "", env.Now())
	if err != nil {
		env.notef("note: claims in flight unreadable: %v", err)
	}
	return report.SwarmOf(recs, windowStart, syncs, claims)
}
