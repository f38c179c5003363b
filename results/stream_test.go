package results

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

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

// parseWhole is Parse as it was before it streamed (issue 24 item 15): the
// whole file as one string, split in place. It is the oracle FuzzScan holds
// the streaming splitter to.
func parseWhole(data []byte) *Table {
	s := strings.TrimPrefix(string(data), "\uFEFF")
	t := &Table{}
	no := 0
	for len(s) > 0 {
		no++
		i := strings.IndexAny(s, "\r\n")
		var line string
		if i < 0 {
			line, s = s, ""
		} else {
			line = s[:i]
			if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				s = s[i+2:]
			} else {
				s = s[i+1:]
			}
		}
		if !utf8.ValidString(line) {
			line = strings.ToValidUTF8(line, "\uFFFD")
		}
		trimmed := strings.TrimSpace(line)
		if len(t.Lines) == 0 && trimmed != "" && trimmed[0] != '#' && !strings.Contains(line, "\t") && strings.Contains(line, `\t`) {
			t.LiteralTabs = true
		}
		if t.LiteralTabs && !strings.Contains(line, "\t") {
			line = strings.ReplaceAll(line, `\t`, "\t")
		}
		switch {
		case trimmed == "":
			t.Blank++
		case trimmed[0] == '#':
			t.Comments = append(t.Comments, Line{No: no, Fields: SplitFields(strings.TrimSpace(trimmed[1:]))})
		default:
			t.Lines = append(t.Lines, Line{No: no, Fields: SplitFields(line)})
		}
	}
	return t
}

// FuzzScan: the streaming splitter gives the lines the whole-file one
// gave, whatever the reads' sizes, and Scan over one-byte reads understands
// a file as Read does.
func FuzzScan(f *testing.F) {
	for _, p := range corpusFiles(f) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"\uFEFF", "\r", "\r\r\n\n", "a\tb\r", "\uFEFF#c\r\nx", `a\tb` + "\r" + `c\td`, "\xff\xfe\t1\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := parseWhole(data)
		for _, src := range []Source{BytesSource(data), oneByteSource(data)} {
			got := &Table{}
			r, _ := src()
			lt, err := scanLines(r, func(no, kind int, fields []string) error {
				switch kind {
				case kindBlank:
					got.Blank++
				case kindComment:
					got.Comments = append(got.Comments, Line{No: no, Fields: fields})
				default:
					got.Lines = append(got.Lines, Line{No: no, Fields: fields})
				}
				return nil
			})
			got.LiteralTabs = lt
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("streamed %+v (%v), whole %+v", got, err, want)
			}
		}
		res, err := Read(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Scan(oneByteSource(data), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Rows != len(res.Entries) || !reflect.DeepEqual(got.Notes, res.Notes) || !reflect.DeepEqual(got.Skipped, res.Skipped) {
			t.Fatalf("Scan: %d rows, notes %q; Read: %d, %q", got.Rows, got.Notes, len(res.Entries), res.Notes)
		}
	})
}
