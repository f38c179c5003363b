// Package share moves the ledger between machines through a git remote:
// push, pull and sync, the shared ledger tree (format version, shards,
// config.json, archives) and its invariants, the fold and merge of arriving
// records into the store, run refs, claims, and the in-process file
// transport with its receive and upload packs; since ledger format 3
// (issue 29) also each machine's ledger ref and pin chain on the remote
// (sync_machines.go, sync_pins.go), pack consolidation (sync_repack.go),
// what a push sends and pins (sync_missing.go, sync_pending.go) and the
// credentials of ssh and https remotes (sync_auth.go).
//
// It reaches the repository through gitrepo's API (Repo embeds
// *gitrepo.Repo) and writes packs through gitwire. It must not open the
// go-git handle itself, print, or decide anything about a run's outcome.
package share
