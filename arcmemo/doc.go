// Package arcmemo turns the outputs of ArcMemo (arc_memo, the Hydra
// evaluation driver) and of its re-implementation mem2 into ledger records:
// one record per solve pass and one per memory snapshot.
//
// It reads run directories and memory files and never writes anything; the
// cmd layer appends the records through ledger. The formats are specified in
// shared/ARCMEMO_FORMATS.md; scoring follows its §3, applying each
// producer's own strict rule (RuleMem2 or RuleArcMemo).
package arcmemo
