package ledger

import (
	"reflect"
	"testing"
)

func TestSortRecords(t *testing.T) {
	rec := func(ts, id string) Record { return Record{Timestamp: ts, RunID: RunID(id)} }
	cases := []struct {
		name string
		in   []Record
		want []string
	}{
		{"already ordered", []Record{rec("2026-11-22T01:00:00Z", "a"), rec("2026-11-22T01:00:01Z", "b")}, []string{"a", "b"}},
		{"pulled after local", []Record{rec("2026-11-22T02:00:00Z", "local"), rec("2026-11-22T01:00:00Z", "pulled")}, []string{"pulled", "local"}},
		{"equal timestamps by run id", []Record{rec("2026-11-22T01:00:00Z", "z"), rec("2026-11-22T01:00:00Z", "m"), rec("2026-11-22T01:00:00Z", "a")}, []string{"a", "m", "z"}},
		{"offsets compare as instants", []Record{rec("2026-11-22T03:00:00+02:00", "b"), rec("2026-11-22T02:00:00Z", "a")}, []string{"b", "a"}},
		{"unparsable first", []Record{rec("2026-11-22T01:00:00Z", "a"), rec("garbage", "b")}, []string{"b", "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			offsets := make([]int64, len(tc.in))
			for i := range offsets {
				offsets[i] = int64(i)
			}
			in := append([]Record(nil), tc.in...)
			sortRecordsWith(in, offsets)
			var got []string
			for i, r := range in {
				got = append(got, string(r.RunID))
				if tc.in[offsets[i]].RunID != r.RunID {
					t.Fatalf("offset %d did not move with record %s", offsets[i], r.RunID)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
