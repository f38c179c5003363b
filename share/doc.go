// Package share moves the ledger between machines through a git remote:
// push, pull and sync, the shared ledger tree (format version, shards,
// config.json, archives) and its invariants, the fold and merge of arriving
// records into the store, run refs, claims, and the in-process file
// transport with its receive and upload packs.
//
// It reaches the repository through gitrepo's API (Repo embeds
// *gitrepo.Repo) and writes packs through gitwire. It must not open the
// go-git handle itself, print, or decide anything about a run's outcome.
package share
