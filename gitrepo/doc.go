// Package gitrepo is memorylab's owner of go-git for a repository: open and
// locate (OpenRepo, Locate), provenance, pins and atomic ref updates,
// branch, reset, diff and the run's code change, ancestry, hooks, the
// checkout lock, broken-ref repair, and the scratch repositories of the demo
// and tests. It maps go-git's errors to ledger's sentinels.
//
// It offers share a narrow API over the go-git handle (handle.go) rather than
// the handle itself. It knows records only as ledger values, writes packs
// through gitwire, and must not know the shared ledger tree, push, pull or
// claims (package share), nor print or read flags.
package gitrepo
