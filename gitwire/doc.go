// Package gitwire is git's wire and pack plumbing for memorylab: the pack
// writer (PackBuilder, EncodeEntry, with AppendRecordStream's zlib streams
// for records and NewCompressor's for bigger objects), the
// one builder of a pack index from what a writer knows (WriteIndex), a
// check of a pack against its index as git verify-pack makes it
// (VerifyPack), a storage opener that reads pack indexes whole
// (OpenStorage), and a storer that refuses deltas (UndeltifiedStorer).
//
// It takes a go-git storer or a directory and knows no records, no ledger
// tree format and no refs of memorylab's: those belong to gitrepo and share.
// It must not import any memorylab package but atomicfile.
package gitwire
