package ledger

// Provenance is where a run's code came from.
type Provenance struct {
	Branch     string // branch name, or "HEAD" when detached
	Commit     string // full 40-hex commit
	Parent     string // full parent commit; "" for a root commit
	Dirty      bool   // the working tree differs from HEAD
	TrainPatch []byte // unified diff of the train file (parent → commit, or working tree when dirty)
	// DirtyUnknown is why the working tree could not be compared with
	// HEAD (Dirty is then true: the commit may not be the code that ran).
	// It never stops a log: a run has already trained.
	DirtyUnknown error
}

// Short returns the 7-character form of a full hash.
func Short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}
