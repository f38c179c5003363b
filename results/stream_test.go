package results

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"
	"testing/iotest"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// oneByteSource gives data one byte per Read, so every line break, CRLF
// and BOM falls across the scanner's buffer ends.
func oneByteSource(data []byte) Source {
	return func() (io.Reader, error) { return iotest.OneByteReader(bytes.NewReader(data)), nil }
}

// TestScanStreamsAsRead: an import streams a file (Scan, then PlanEach)
// without holding its rows (issue 24 item 15); what it understands and the
// records it plans must be byte for byte what Read and Plan give, for
// every real file and for line breaks split across reads.
func TestScanStreamsAsRead(t *testing.T) {
	anchor := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	files := corpusFiles(t)
	inputs := map[string][]byte{
		"mixed breaks": []byte("\uFEFFcommit\tval_bpb\tmemory_gb\tstatus\tdescription\r\na1b2c3d\t0.99\t44.0\tkeep\tbase\r" +
			"b2c3d4e\t0.98\t44.0\tkeep\tlr\n\n# note\r\nc3d4e5f\t0.97\t44.0\tkeep\tlast\r"),
		"literal tabs": []byte(`commit\tval_bpb\tstatus\tdescription` + "\n" + `a1b2c3d\t0.99\tkeep\tbase` + "\n"),
		"no header":    []byte("a1b2c3d\t0.99\tkeep\tbase\nb2c3d4e\t0.98\tdiscard\tlr\nc3d4e5f\t-999\tcrash\toom\n"),
	}
	for _, path := range files {
		inputs[path] = readFile(t, path)
	}
	for name, data := range inputs {
		want, err := Read(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantPlan := want.Plan("f.tsv", anchor, "val_bpb", KeyCounts{})
		for _, src := range []Source{BytesSource(data), oneByteSource(data)} {
			got, err := Scan(src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Entries != nil || got.Rows != len(want.Entries) {
				t.Fatalf("%s: Scan kept %d entries, counted %d; want none kept, %d counted", name, len(got.Entries), got.Rows, len(want.Entries))
			}
			w := *want
			w.Entries = nil
			if !reflect.DeepEqual(got.Schema, w.Schema) || !reflect.DeepEqual(got.Notes, w.Notes) || !reflect.DeepEqual(got.Statuses, w.Statuses) ||
				!reflect.DeepEqual(got.Skipped, w.Skipped) || got.Comments != w.Comments || got.RealTimes != w.RealTimes {
				t.Fatalf("%s: Scan understood\n%+v\nRead\n%+v", name, got, w)
			}
			i := 0
			err = got.PlanEach(src, "f.tsv", anchor, "val_bpb", KeyCounts{}, func(p Planned) error {
				if i >= len(wantPlan) {
					return errors.New("more rows than Read")
				}
				a, _ := ledger.MarshalRecord(p.Record)
				b, _ := ledger.MarshalRecord(wantPlan[i].Record)
				if !bytes.Equal(a, b) || p.Present != wantPlan[i].Present || p.Entry.Line != wantPlan[i].Entry.Line {
					t.Fatalf("%s line %d:\nstreamed %s\nplanned  %s", name, p.Entry.Line, a, b)
				}
				i++
				return nil
			})
			if err != nil || i != len(wantPlan) {
				t.Fatalf("%s: %d rows streamed, want %d: %v", name, i, len(wantPlan), err)
			}
		}
	}
}

// TestEachStops: an error from fn stops the stream and is returned as it is.
func TestEachStops(t *testing.T) {
	src := BytesSource([]byte("commit\tval_bpb\tstatus\tdescription\na1b2c3d\t0.99\tkeep\tbase\nb2c3d4e\t0.98\tkeep\tlr\n"))
	res, err := Scan(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	if err := res.Each(src, func(*Entry) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Each: %d calls, %v; want 1 call, stop", n, err)
	}
	bad := Source(func() (io.Reader, error) { return iotest.ErrReader(io.ErrUnexpectedEOF), nil })
	if _, err := Scan(bad, Options{}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Scan of a failing reader: %v", err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
