package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Bounds on what one record may hold (issue 17 item 4). A record is one
// ledger line and one blob in the shared ledger, and every reader holds
// whole lines: a 17 MB record (a 4 MB tqdm line stored as the crash summary,
// again as the tail and again in the decision packet) pushed fine and then
// made every other clone refuse the remote ledger. So text that is only a
// copy or an excerpt is cut with a marker at log time, and what remains is
// refused above these limits, by log, import and pull alike
// (RecordProblems), far below the 16 MiB a reader accepts
// (MaxRecordBytes), so a record one machine writes every machine reads.
const (
	// MaxRecordSize is the largest ledger line (JSON, without the newline)
	// a writer produces or a pull accepts.
	MaxRecordSize = 1 << 20
	// MaxMetrics is the most metrics one record may carry (a summary JSON
	// with a million leaves is refused, naming the count).
	MaxMetrics = 4096
	// MaxExcerpt is the longest crash summary or tail line, and the longest
	// string inside novelty_guard and decision_packet (copies of text the
	// record holds whole elsewhere), in bytes. Longer ones keep their first
	// and last halves around a marker saying how much was cut.
	MaxExcerpt = 2 << 10
	// MaxTags is the most tags a record or an idea may carry, and
	// MaxTagBytes the longest tag. Issue 24.7: one `log` with 200,000
	// one-character tags (800 KB, under MaxRecordSize) held the store lock
	// for 35 s while its comparison text was built. Real tags are a few
	// words (the corpus: at most 2 tags of 15 bytes); the novelty index
	// drops tokens of 100 bytes or more anyway (bleve#1576).
	MaxTags     = 64
	MaxTagBytes = 100
	// MaxClockSkew is how far past the validating clock a timestamp may
	// be: a record dated year 9999 would sit in every report window.
	MaxClockSkew = 24 * time.Hour
)

// TagsProblem says what is wrong with tags ("" when nothing): more than
// MaxTags of them, or one longer than MaxTagBytes. validateRecord and the
// idea check of ops both ask it, so log, check, import and pull agree.
func TagsProblem(tags []string) string {
	if len(tags) > MaxTags {
		return fmt.Sprintf("%d tags, more than the %d a record may carry", len(tags), MaxTags)
	}
	for _, t := range tags {
		if len(t) > MaxTagBytes {
			return fmt.Sprintf("tag %q is %d bytes, longer than %d", Truncate(t, 40), len(t), MaxTagBytes)
		}
	}
	return ""
}

// Excerpt returns s when it fits in MaxExcerpt bytes, else its first and
// last parts (cut at rune boundaries) around "…[N bytes cut]…".
func Excerpt(s string) string {
	if len(s) <= MaxExcerpt {
		return s
	}
	half := (MaxExcerpt - 32) / 2
	h := half
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - half
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	head, tail := s[:h], s[t:]
	return fmt.Sprintf("%s …[%d bytes cut]… %s", head, len(s)-len(head)-len(tail), tail)
}

// BoundRecord cuts, with a marker, the text r holds only as an excerpt or a
// copy: the crash summary and tail lines, and every string inside
// novelty_guard and decision_packet (descriptions of matched runs, the
// probe text, the packet's copy of the run). The crash tail is stored once,
// in error.tail: the ledger's copy of the packet keeps the error's summary
// and source with an empty tail (runs/<id>/decision_packet.json keeps the
// whole packet). The record's own fields (description, notes, metrics) are
// never cut: RecordProblems refuses a record that is still too large,
// naming the limit. Call it on new records only, never on pulled ones (a
// changed line would differ from the shared blob).
func BoundRecord(r *Record) {
	if e := r.Error; e != nil {
		e.Summary = Excerpt(e.Summary)
		for i, l := range e.Tail {
			e.Tail[i] = Excerpt(l)
		}
	}
	r.NoveltyGuard = boundRaw(r.NoveltyGuard, false)
	r.DecisionPacket = boundRaw(r.DecisionPacket, r.Error != nil)
}

// boundRaw applies Excerpt to every string of a JSON document, keeping its
// key order, and with dropTail empties a top-level error.tail. A document
// that needs no change is returned byte for byte.
func boundRaw(raw RawJSON, dropTail bool) RawJSON {
	if len(raw) <= MaxExcerpt && !dropTail {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	changed := false
	var value func(path string) error
	value = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				buf.WriteByte('{')
				for n := 0; dec.More(); n++ {
					k, err := dec.Token()
					if err != nil {
						return err
					}
					key, _ := k.(string)
					if n > 0 {
						buf.WriteByte(',')
					}
					writeJSONString(&buf, key)
					buf.WriteByte(':')
					if dropTail && path == "/error" && key == "tail" {
						var skip json.RawMessage
						if err := dec.Decode(&skip); err != nil {
							return err
						}
						if !bytes.Equal(bytes.TrimSpace(skip), []byte("[]")) {
							changed = true
						}
						buf.WriteString("[]")
						continue
					}
					if err := value(path + "/" + key); err != nil {
						return err
					}
				}
				buf.WriteByte('}')
			case '[':
				buf.WriteByte('[')
				for n := 0; dec.More(); n++ {
					if n > 0 {
						buf.WriteByte(',')
					}
					if err := value(path + "/[]"); err != nil {
						return err
					}
				}
				buf.WriteByte(']')
			}
			_, err := dec.Token() // the closing delimiter
			return err
		case string:
			if len(t) > MaxExcerpt {
				changed = true
				t = Excerpt(t)
			}
			writeJSONString(&buf, t)
		case json.Number:
			buf.WriteString(t.String())
		case bool:
			fmt.Fprint(&buf, t)
		case nil:
			buf.WriteString("null")
		}
		return nil
	}
	if err := value(""); err != nil || !changed {
		return raw
	}
	return RawJSON(buf.Bytes())
}

func writeJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	buf.Truncate(buf.Len() - 1) // Encode's newline
}
