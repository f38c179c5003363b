package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestReadItems(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes)
	bigDetail := `{"d":"` + strings.Repeat("y", MaxDetailBytes) + `"}`
	cases := []struct {
		name, in string
		want     []Item
		err      string // substring of the error; "" for success
	}{
		{name: "score and correct", in: `{"id": "q17", "score": 0.5}` + "\n" + `{"id":"q18","correct":true,"group":"temporal"}` + "\n",
			want: []Item{ScoreItem("q17", 0.5), func() Item { it := CorrectItem("q18", true); it.Group = "temporal"; return it }()}},
		{name: "blank lines, CRLF, no final newline", in: "\n{\"id\":\"a\",\"correct\":false}\r\n\r\n  \n{\"id\":\"b\",\"score\":-2}",
			want: []Item{CorrectItem("a", false), ScoreItem("b", -2)}},
		{name: "unknown keys ignored", in: `{"id":"a","score":1,"question":"who?"}`, want: []Item{ScoreItem("a", 1)}},
		{name: "detail kept compacted", in: `{"id":"a","score":1,"detail": {"k": [1, 2]}}`,
			want: []Item{func() Item { it := ScoreItem("a", 1); it.Detail = []byte(`{"k":[1,2]}`); return it }()}},
		{name: "null detail", in: `{"id":"a","score":1,"detail":null}`, want: []Item{ScoreItem("a", 1)}},
		{name: "empty file", in: "", want: nil},
		{name: "duplicate id", in: `{"id":"q1","score":1}` + "\n" + `{"id":"q2","score":1}` + "\n" + `{"id":"q1","score":0}`, err: `items line 3: duplicate id "q1" (first on line 1)`},
		{name: "neither", in: `{"id":"q1","group":"x"}`, err: `items line 1: id "q1" has neither "score" (a number) nor "correct" (true or false)`},
		{name: "null score", in: `{"id":"q1","score":null}`, err: `has neither`},
		{name: "both", in: `{"id":"q1","score":1,"correct":true}`, err: `has both "score" and "correct"`},
		{name: "no id", in: `{"score":1}`, err: `items line 1: no "id"`},
		{name: "empty id", in: `{"id":"","score":1}`, err: `id is empty`},
		{name: "numeric id", in: `{"id":17,"score":1}`, err: `"id" must not be a JSON number`},
		{name: "string score", in: `{"id":"a","score":"0.5"}`, err: `"score" must not be a JSON string`},
		{name: "control char in id", in: `{"id":"a\u001b[31m","score":1}`, err: `control character`},
		{name: "long id", in: `{"id":"` + strings.Repeat("i", MaxIDBytes+1) + `","score":1}`, err: `id is 257 bytes, more than 256`},
		{name: "long group", in: `{"id":"a","score":1,"group":"` + strings.Repeat("g", MaxGroupBytes+1) + `"}`, err: `group is 129 bytes`},
		{name: "not json", in: "{\"id\":\"a\",\"score\":1}\nid,score\n", err: `items line 2: not a JSON object`},
		{name: "array", in: `[1,2]`, err: `items line 1: not a JSON object`},
		{name: "two values", in: `{"id":"a","score":1} {"id":"b","score":1}`, err: `more than one JSON value`},
		{name: "detail not object", in: `{"id":"a","score":1,"detail":[1]}`, err: `"detail" must be a JSON object`},
		{name: "detail too big", in: `{"id":"a","score":1,"detail":` + bigDetail + `}`, err: `"detail" is 4104 bytes, more than 4096`},
		{name: "line too long", in: `{"id":"a","score":1}` + "\n" + long + "xx\n", err: fmt.Sprintf("items line 2: longer than %d bytes", MaxLineBytes)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadItems(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidItems) {
					t.Fatalf("err = %v, want one containing %q wrapping ErrInvalidItems", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadItemsBound(t *testing.T) {
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, `{"id":"q%d","score":1}`+"\n", i)
	}
	_, err := readItems(strings.NewReader(b.String()), 3, MaxFileBytes)
	if err == nil || err.Error() != "items line 4: more than 3 items (the bound per run)" || !errors.Is(err, ErrInvalidItems) {
		t.Fatalf("err = %v", err)
	}
	if items, err := readItems(strings.NewReader(b.String()), 4, MaxFileBytes); err != nil || len(items) != 4 {
		t.Fatalf("4 items under a bound of 4: %d, %v", len(items), err)
	}
	// 4 lines of 22 bytes: 88 bytes fit a bound of 88, not one of 87.
	if _, err := readItems(strings.NewReader(b.String()), 10, 88); err != nil {
		t.Fatalf("88 bytes under a bound of 88: %v", err)
	}
	_, err = readItems(strings.NewReader(b.String()), 10, 87)
	if err == nil || err.Error() != "items: the file is larger than 87 bytes (the bound per run)" || !errors.Is(err, ErrInvalidItems) {
		t.Fatalf("size bound: %v", err)
	}
	if MaxItems != 1_000_000 {
		t.Fatalf("MaxItems = %d, the issue sets 1M", MaxItems)
	}
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReadItemsReadError(t *testing.T) {
	_, err := ReadItems(failReader{})
	if err == nil || errors.Is(err, ErrInvalidItems) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
}

func TestWriteItemsRoundTrip(t *testing.T) {
	in := `{"id":"q1","score":0.25,"group":"multi-hop"}
{"id":"q2","correct":true}
{"id":"q3","correct":false,"detail":{"attempts":2}}
{"id":"ü 4","score":-1e-300}
`
	items, err := ReadItems(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteItems(&out, items); err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Fatalf("written:\n%s\nwant:\n%s", out.String(), in)
	}
}

func TestSummarize(t *testing.T) {
	cases := []struct {
		name  string
		items []Item
		want  Summary
	}{
		{"empty", nil, Summary{}},
		{"binary", []Item{CorrectItem("a", true), CorrectItem("b", false), CorrectItem("c", true), CorrectItem("d", true)}, Summary{Count: 4, Mean: 0.75, Binary: true}},
		{"scores", []Item{ScoreItem("a", 0.5), ScoreItem("b", 1)}, Summary{Count: 2, Mean: 0.75}},
		{"mixed", []Item{ScoreItem("a", 0.5), CorrectItem("b", true)}, Summary{Count: 2, Mean: 0.75}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.items); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzReadItems: no panic; an error wraps ErrInvalidItems; what is read
// writes and reads back to the same items, and the written form is stable.
func FuzzReadItems(f *testing.F) {
	for _, s := range []string{
		`{"id": "q17", "score": 0.5}`,
		`{"id":"q18","correct":true,"group":"temporal"}` + "\n" + `{"id":"q19","correct":false}`,
		`{"id":"a","score":1,"detail":{"k":[1,2,{"x":null}]}}`,
		`{"id":"a","score":1}` + "\n" + `{"id":"a","score":2}`,
		"{\"id\":\"a\",\"score\":1e308}\r\n\r\n",
		`{"id":"a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := ReadItems(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalidItems) {
				t.Fatalf("error does not wrap ErrInvalidItems: %v", err)
			}
			return
		}
		var w1 bytes.Buffer
		if err := WriteItems(&w1, items); err != nil {
			t.Fatal(err)
		}
		again, err := ReadItems(bytes.NewReader(w1.Bytes()))
		if err != nil {
			t.Fatalf("re-reading written items: %v\n%s", err, w1.Bytes())
		}
		if len(items) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(items, again) {
			t.Fatalf("round trip changed items:\n%+v\n%+v", items, again)
		}
		var w2 bytes.Buffer
		WriteItems(&w2, again)
		if !bytes.Equal(w1.Bytes(), w2.Bytes()) {
			t.Fatalf("written form not stable:\n%s\n%s", w1.Bytes(), w2.Bytes())
		}
	})
}
