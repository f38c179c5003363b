package evidence

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// ItemsFileName is the name of a run's items file in its archive
// (runs/<id>/items.jsonl) and the conventional name a training script writes.
const ItemsFileName = "items.jsonl"

// Bounds on an items file.
const (
	MaxItems       = 1_000_000 // items per run
	MaxLineBytes   = 16 << 10  // bytes per line, the newline excluded
	MaxIDBytes     = 256       // bytes per id
	MaxGroupBytes  = 128       // bytes per group
	MaxDetailBytes = 4 << 10   // bytes of a compacted detail object
	MaxFileBytes   = 64 << 20  // bytes of a whole items file (so it can travel whole with sync)
)

// ErrInvalidItems is wrapped by every error about the content of an items
// file: callers map it to "bad input".
var ErrInvalidItems = errors.New("invalid items")

// ItemsError is an error about one line of an items file (Line 0 for the
// file as a whole). errors.Is(err, ErrInvalidItems) holds for it.
type ItemsError struct {
	Line int
	Msg  string
}

func (e *ItemsError) Error() string {
	if e.Line == 0 {
		return "items: " + e.Msg
	}
	return "items line " + strconv.Itoa(e.Line) + ": " + e.Msg
}

// Is makes errors.Is(err, ErrInvalidItems) true.
func (e *ItemsError) Is(target error) bool { return target == ErrInvalidItems }

// Item is the outcome of one evaluated item (a question, a problem, a
// puzzle). Exactly one of Score and Correct is set.
type Item struct {
	ID      string
	Score   *float64 // a graded outcome, any finite number (higher is better)
	Correct *bool    // a binary outcome
	Group   string   // optional category
	Detail  json.RawMessage
}

// Binary reports whether the outcome is right/wrong rather than a score.
func (it Item) Binary() bool { return it.Correct != nil }

// Value is the outcome as a number: the score, or 1/0 for correct/wrong.
func (it Item) Value() float64 {
	if it.Correct != nil {
		if *it.Correct {
			return 1
		}
		return 0
	}
	if it.Score != nil {
		return *it.Score
	}
	return 0
}

// ScoreItem and CorrectItem build items (handy for producers and tests).
func ScoreItem(id string, score float64) Item { return Item{ID: id, Score: &score} }

// CorrectItem builds a binary item.
func CorrectItem(id string, correct bool) Item { return Item{ID: id, Correct: &correct} }

// itemLine is the JSON shape of one line.
type itemLine struct {
	ID      *string         `json:"id"`
	Score   *float64        `json:"score,omitempty"`
	Correct *bool           `json:"correct,omitempty"`
	Group   string          `json:"group,omitempty"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// ReadItems reads an items file (format in the package comment), checking
// every bound. The error names the line and wraps ErrInvalidItems for bad
// content; read errors from r are returned wrapped as they are.
func ReadItems(r io.Reader) ([]Item, error) { return readItems(r, MaxItems, MaxFileBytes) }

func readItems(r io.Reader, maxItems int, maxBytes int64) ([]Item, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var items []Item
	seen := map[string]int{}
	var total int64
	for line := 1; ; line++ {
		raw, err := readLine(br)
		total += int64(len(raw))
		if err == nil {
			total++ // the newline ("\r" is counted in raw's place: close enough)
		}
		if total > maxBytes {
			return nil, &ItemsError{Msg: fmt.Sprintf("the file is larger than %d bytes (the bound per run)", maxBytes)}
		}
		if err == errLineTooLong {
			return nil, &ItemsError{Line: line, Msg: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("unable to read items: %w", err)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			it, perr := parseItem(raw)
			if perr != nil {
				return nil, &ItemsError{Line: line, Msg: perr.Error()}
			}
			if first, dup := seen[it.ID]; dup {
				return nil, &ItemsError{Line: line, Msg: fmt.Sprintf("duplicate id %q (first on line %d)", it.ID, first)}
			}
			if len(items) == maxItems {
				return nil, &ItemsError{Line: line, Msg: fmt.Sprintf("more than %d items (the bound per run)", maxItems)}
			}
			seen[it.ID] = line
			items = append(items, it)
		}
		if err == io.EOF {
			return items, nil
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns one line without its "\n" or "\r\n". At the end of the
// input it returns the last (possibly empty) line with io.EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > MaxLineBytes+2 {
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			buf = append(buf, frag...)
			continue
		}
		if buf != nil {
			frag = append(buf, frag...)
		}
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		frag = bytes.TrimSuffix(frag, []byte("\r"))
		if len(frag) > MaxLineBytes {
			return nil, errLineTooLong
		}
		return frag, err
	}
}

func parseItem(raw []byte) (Item, error) {
	var l itemLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&l); err != nil {
		return Item{}, fmt.Errorf("not a JSON object with an id and a score or correct: %s", jsonErr(err))
	}
	if dec.More() {
		return Item{}, errors.New("more than one JSON value on the line")
	}
	if l.ID == nil {
		return Item{}, errors.New(`no "id"`)
	}
	if err := checkText("id", *l.ID, MaxIDBytes, false); err != nil {
		return Item{}, err
	}
	if err := checkText("group", l.Group, MaxGroupBytes, true); err != nil {
		return Item{}, err
	}
	it := Item{ID: *l.ID, Score: l.Score, Correct: l.Correct, Group: l.Group}
	switch {
	case l.Score == nil && l.Correct == nil:
		return Item{}, fmt.Errorf(`id %q has neither "score" (a number) nor "correct" (true or false)`, it.ID)
	case l.Score != nil && l.Correct != nil:
		return Item{}, fmt.Errorf(`id %q has both "score" and "correct"; give one`, it.ID)
	case l.Score != nil && (math.IsNaN(*l.Score) || math.IsInf(*l.Score, 0)):
		return Item{}, fmt.Errorf("id %q: score is not a finite number", it.ID)
	}
	if d := bytes.TrimSpace(l.Detail); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		if d[0] != '{' {
			return Item{}, fmt.Errorf(`id %q: "detail" must be a JSON object`, it.ID)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, d); err != nil {
			return Item{}, fmt.Errorf(`id %q: "detail": %s`, it.ID, jsonErr(err))
		}
		if c.Len() > MaxDetailBytes {
			return Item{}, fmt.Errorf(`id %q: "detail" is %d bytes, more than %d`, it.ID, c.Len(), MaxDetailBytes)
		}
		it.Detail = json.RawMessage(c.Bytes())
	}
	return it, nil
}

// jsonErr shortens encoding/json messages ("json: cannot unmarshal ...").
func jsonErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%q must not be a JSON %s", te.Field, te.Value)
	}
	return err.Error()
}

func checkText(field, s string, max int, empty bool) error {
	if s == "" {
		if empty {
			return nil
		}
		return fmt.Errorf("%s is empty", field)
	}
	if len(s) > max {
		return fmt.Errorf("%s is %d bytes, more than %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Errorf("%s %q holds a control character", field, s)
		}
	}
	return nil
}

// WriteItems writes items in the file format, one line each. ReadItems of
// the output gives the items back.
func WriteItems(w io.Writer, items []Item) error {
	bw := bufio.NewWriter(w)
	for _, it := range items {
		id := it.ID
		b, err := json.Marshal(itemLine{ID: &id, Score: it.Score, Correct: it.Correct, Group: it.Group, Detail: it.Detail})
		if err != nil {
			return fmt.Errorf("unable to write item %q: %w", it.ID, err)
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Summary describes a set of items.
type Summary struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Binary bool    `json:"binary"` // every item is correct/wrong; Mean is then the accuracy
}

// Summarize returns the count, mean value and kind of items.
func Summarize(items []Item) Summary {
	s := Summary{Count: len(items), Binary: len(items) > 0}
	var sum float64
	for _, it := range items {
		sum += it.Value()
		if !it.Binary() {
			s.Binary = false
		}
	}
	if len(items) > 0 {
		s.Mean = sum / float64(len(items))
	}
	return s
}
