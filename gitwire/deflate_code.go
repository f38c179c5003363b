package gitwire

// recordCodeLengths is RecordStream's code: the lengths of the 286
// literal/length codes, then of the 30 distance codes, one hex digit each,
// trained on testdata/records.jsonl by trainCodeLengths (ledger records of
// scripts/gen_ledger.py's; every symbol counted once more, so each has a
// code). TestRecordCodeLengthsAreTrained holds it to the training; rewrite
// it with `go test ./gitwire -run RecordCodeLengths -update`.
const recordCodeLengths = "ffffffffffafffffffffffffffffffff5f6ffdfdbbff686856666666767ddcdffadeeddcfefbcafdccdd9defff99c9f5f575646775a856556e55567788b8c8fffffffffffffffffffeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeae45777776778788988899adedbcec7dbddb9656554444343434568ddddd"
