// Package evidence holds the statistics that tell a real difference from
// luck: per-item outcomes of one run (Item, read and written as JSONL), the
// paired comparison of two runs item by item (Pair: McNemar's exact test for
// binary outcomes, the sign test and a paired bootstrap CI for scores, a
// per-group breakdown), and the run-to-run noise estimated from replicate
// groups (PooledSD, Describe).
//
// The package is pure: no file system, no git, no clock. Randomness (the
// bootstrap) uses a fixed seed, so every result is reproducible.
//
// # Items file format
//
// One JSON object per line (UTF-8; blank lines are skipped; "\r\n" endings
// are accepted):
//
//	{"id": "q17", "score": 0.5}
//	{"id": "q18", "correct": true, "group": "multi-hop"}
//	{"id": "q19", "correct": false, "detail": {"tokens": 812, "judge": "gpt-4o"}}
//
// The keys:
//
//   - "id" (string, required): unique within the file, 1..MaxIDBytes bytes,
//     printable UTF-8. A duplicate id is an error naming the id and both lines.
//   - "score" (finite number) or "correct" (boolean): exactly one of them.
//     A correct item counts as 1 (true) or 0 (false) in means.
//   - "group" (string, optional): a category such as LOCOMO's "multi-hop" or
//     "temporal", at most MaxGroupBytes bytes; comparisons break down by it.
//   - "detail" (object, optional): an extension for producers that want
//     per-item facts kept with the run (ArcMemo keeps per-puzzle attempts,
//     for example). It is stored compacted but otherwise verbatim, at most
//     MaxDetailBytes bytes, and never interpreted by memorylab.
//
// Other keys are ignored. A file holds at most MaxItems items in at most
// MaxFileBytes bytes, and no line is longer than MaxLineBytes. A run's items are archived under the name
// ItemsFileName.
package evidence
