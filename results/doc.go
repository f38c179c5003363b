// Package results reads and writes karpathy's results.tsv, the flat table the
// autoresearch loop keeps: commit, val_bpb, memory_gb, status, description.
package results
