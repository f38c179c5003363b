package gitwire

// recordCodeLengths is RecordStream's code: the lengths of the 286
// literal/length codes, then of the 30 distance codes, one hex digit each,
// trained on testdata/records.jsonl by trainCodeLengths (ledger records of
// scripts/gen_ledger.py's; every symbol counted once more, so each has a
// code). TestRecordCodeLengthsAreTrained holds it to the training; rewrite
// it with `go test ./gitwire -run RecordCodeLengths -update`.
const recordCodeLengths = "9999999999999999999999999999999969799999999978786777777787799999999999999999999999999999999999969676757776986666696666888898989999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999995677887788888898889999999999899888865655454434343456888888"
