package ledger

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A ledger another tool wrote (the Python MemoryLab, scripts/gen_ledger.py:
// keys sorted, ", " and ": " separators, 45524.0 for a float) is not
// canonical, and the fold decoded each line into a Record and encoded it
// again: maps, strings and a sort per line, 2.7 s of CPU at 100k runs.
// transcodeLine writes the same bytes from the line's own spans: each
// field's value is found once (skipValue; a raw document is checked there
// by the decoder's own syntax check, fastDec.skip), then the fields are
// written in appendRecord's order, each value checked as it is written, a string copied when
// it is already as appendLineString writes it, a number re-formatted, a
// raw document compacted (appendRawJSON), an object's members copied when
// its keys come sorted. It is exact by refusing to guess: a key in
// another case or given twice, a value of another type than the field's,
// an escaped key, unsorted keys, a metric that is not a number, a Source,
// anything unusual is false, and the caller decodes and encodes the line
// as before. FuzzTranscodeLine holds it to json.Unmarshal and
// MarshalRecord.

// recordFieldName is each field's JSON name, by index (recordFieldNames).
var recordFieldName = func() (names [fCorrection + 1]string) {
	for name, f := range recordFieldNames {
		names[f] = name
	}
	return names
}()

// valueSpan is a value's bytes in a line: [start, end); end 0 when absent.
type valueSpan struct{ start, end int }

// transcoded is what transcodeLine reads of a record besides its line.
type transcoded struct {
	schema    int
	runID     string
	timestamp string
}

// transcodeLine appends to dst the canonical line (AppendRecordJSON's
// bytes) of the record json.Unmarshal decodes body (a trimmed ledger line)
// to, and returns the record's schema version, run id and timestamp;
// false: decode and encode body instead (dst's extension is then garbage).
func transcodeLine(dst, body []byte) (out []byte, t transcoded, ok bool) {
	var spans [fCorrection + 1]valueSpan
	d := fastDec{b: body}
	if !d.object(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		f := recordField(key)
		if f < 0 {
			return d.skip() // not a field: json.Unmarshal drops it too
		}
		if string(key) != recordFieldName[f] || spans[f].end != 0 {
			return false
		}
		start := d.ws()
		if f == fGuard || f == fPacket {
			// Checked here, compacted below (appendRawJSON, checked).
			if !d.skip() {
				return false
			}
		} else {
			// Found here (skipValue: a string to its closing quote, an
			// object or array to its closing bracket, anything else to the
			// next delimiter), checked below as it is written: every value
			// but the raw documents is read whole by the transcoder (a
			// string by scanStr or json.Unmarshal, an object member by
			// member, a number by the decoder's syntax), and the line's own
			// syntax is checked around the values, so a line whose values
			// and structure both check is one JSON document.
			end := skipValue(body, start)
			if end <= start {
				return false // no value
			}
			d.i = end
		}
		spans[f] = valueSpan{start, d.i}
		return true
	}) || d.ws() != len(body) {
		return dst, t, false
	}
	tc := transcoder{b: body, out: dst, ok: true}
	val := func(f int) []byte {
		if sp := spans[f]; sp.end != 0 {
			return body[sp.start:sp.end]
		}
		return nil
	}
	present := func(f int) bool { v := val(f); return v != nil && string(v) != "null" }
	if present(fSource) {
		return dst, t, false // any shape: encoding/json's
	}
	tc.out = append(tc.out, '{')
	if present(fSchema) {
		v, ok := parseInt(val(fSchema))
		if !ok || int64(int(v)) != v {
			return dst, t, false
		}
		t.schema = int(v)
		if v != 0 {
			tc.out = append(tc.out, `"schema_version":`...)
			tc.out = strconv.AppendInt(tc.out, v, 10)
			tc.out = append(tc.out, ',')
		}
	}
	tc.out = append(tc.out, `"run_id":`...)
	t.runID = tc.strValue(val(fRunID), true)
	tc.out = append(tc.out, `,"timestamp_utc":`...)
	t.timestamp = tc.strValue(val(fTimestamp), true)
	tc.field(`,"branch":`, val(fBranch))
	tc.field(`,"commit":`, val(fCommit))
	tc.optStr(`,"commit_full":`, val(fCommitFull))
	tc.out = append(tc.out, `,"parent_commit":`...)
	if present(fParent) {
		tc.str(val(fParent))
	} else {
		tc.out = append(tc.out, "null"...)
	}
	if present(fDirty) {
		tc.out = append(tc.out, `,"dirty":`...)
		tc.bool(val(fDirty))
	}
	tc.field(`,"family":`, val(fFamily))
	tc.field(`,"status":`, val(fStatus))
	tc.field(`,"description":`, val(fDescription))
	tc.field(`,"hypothesis":`, val(fHypothesis))
	tc.out = append(tc.out, `,"tags":`...)
	tc.strs(val(fTags))
	tc.field(`,"notes":`, val(fNotes))
	tc.out = append(tc.out, `,"metrics":`...)
	tc.object(val(fMetrics), tc.metric)
	tc.out = append(tc.out, `,"error":`...)
	if present(fError) {
		tc.fields(val(fError), []string{"summary", "tail", "source"}, func(i int, v []byte) {
			switch i {
			case 0:
				tc.out = append(tc.out, `{"summary":`...)
				tc.str(v)
			case 1:
				tc.out = append(tc.out, `,"tail":`...)
				tc.strs(v)
			case 2:
				tc.out = append(tc.out, `,"source":`...)
				tc.str(v)
				tc.out = append(tc.out, '}')
			}
		})
	} else {
		tc.out = append(tc.out, "null"...)
	}
	tc.out = append(tc.out, `,"artifacts":`...)
	tc.object(val(fArtifacts), tc.str)
	tc.optStr(`,"lineage_root":`, val(fLineageRoot))
	if present(fSeed) {
		v, ok := parseInt(val(fSeed))
		tc.ok = tc.ok && ok
		tc.out = append(tc.out, `,"seed":`...)
		tc.out = strconv.AppendInt(tc.out, v, 10)
	}
	tc.optStr(`,"replicate":`, val(fReplicate))
	if present(fHardware) {
		tc.out = append(tc.out, `,"hardware":{`...)
		sep := false
		tc.fields(val(fHardware), []string{"host", "accelerator"}, func(i int, v []byte) {
			if present := v != nil && string(v) != "null" && string(v) != `""`; !present {
				return
			}
			if i == 1 && sep {
				tc.out = append(tc.out, ',')
			}
			tc.out = append(tc.out, `"`+[]string{"host", "accelerator"}[i]+`":`...)
			tc.str(v)
			sep = true
		})
		tc.out = append(tc.out, '}')
	}
	if present(fItems) {
		tc.fields(val(fItems), []string{"count", "mean", "binary"}, func(i int, v []byte) {
			switch i {
			case 0:
				tc.out = append(tc.out, `,"items":{"count":`...)
				n := int64(0)
				if v != nil && string(v) != "null" {
					var ok bool
					n, ok = parseInt(v)
					tc.ok = tc.ok && ok && int64(int(n)) == n
				}
				tc.out = strconv.AppendInt(tc.out, n, 10)
			case 1:
				tc.out = append(tc.out, `,"mean":`...)
				if v == nil || string(v) == "null" {
					tc.out = append(tc.out, '0')
				} else {
					tc.float(v)
				}
			case 2:
				if string(v) == "true" {
					tc.out = append(tc.out, `,"binary":true`...)
				} else {
					tc.ok = tc.ok && (v == nil || string(v) == "null" || string(v) == "false")
				}
				tc.out = append(tc.out, '}')
			}
		})
	}
	tc.out = append(tc.out, `,"novelty_guard":`...)
	tc.raw(val(fGuard))
	tc.out = append(tc.out, `,"decision_packet":`...)
	tc.raw(val(fPacket))
	if present(fTie) {
		v := val(fTie)
		tc.ok = tc.ok && (string(v) == "true" || string(v) == "false")
		if string(v) == "true" {
			tc.out = append(tc.out, `,"tie":true`...)
		}
	}
	if present(fCorrection) {
		tc.fields(val(fCorrection), []string{"kind", "run_id", "text"}, func(i int, v []byte) {
			tc.out = append(tc.out, []string{`,"correction":{"kind":`, `,"run_id":`, `,"text":`}[i]...)
			tc.str(v)
			if i == 2 {
				tc.out = append(tc.out, '}')
			}
		})
	}
	tc.out = append(tc.out, '}')
	if !tc.ok {
		return dst, t, false
	}
	return tc.out, t, true
}

// transcoder writes a record's values to out; ok turns false at the
// first value it cannot write as encoding/json would.
type transcoder struct {
	b   []byte
	out []byte
	ok  bool
}

// str writes string value v (nil or null: "") as appendLineString does.
func (tc *transcoder) str(v []byte) {
	tc.strValue(v, false)
}

// strValue is str, returning the string when keep.
func (tc *transcoder) strValue(v []byte, keep bool) string {
	if v == nil || string(v) == "null" {
		tc.out = append(tc.out, `""`...)
		return ""
	}
	s := canonScan{b: v}
	if raw, plain, ok := s.scanStr(); ok && s.i == len(v) {
		tc.out = append(tc.out, v...)
		switch {
		case !keep:
			return ""
		case plain:
			return string(raw)
		}
		var u string
		tc.ok = tc.ok && json.Unmarshal(v, &u) == nil
		return u
	}
	if len(v) == 0 || v[0] != '"' {
		tc.ok = false
		return ""
	}
	var u string
	if json.Unmarshal(v, &u) != nil {
		tc.ok = false
		return ""
	}
	tc.out = appendLineString(tc.out, u)
	return u
}

// field writes key and string value v.
func (tc *transcoder) field(key string, v []byte) {
	tc.out = append(tc.out, key...)
	tc.str(v)
}

// optStr writes key and string value v unless v is empty (omitempty).
func (tc *transcoder) optStr(key string, v []byte) {
	if v == nil || string(v) == "null" || string(v) == `""` {
		return
	}
	tc.out = append(tc.out, key...)
	tc.str(v)
}

func (tc *transcoder) bool(v []byte) {
	tc.ok = tc.ok && (string(v) == "true" || string(v) == "false")
	tc.out = append(tc.out, v...)
}

// strs writes null or an array of strings (null elements: "").
func (tc *transcoder) strs(v []byte) {
	if v == nil || string(v) == "null" {
		tc.out = append(tc.out, "null"...)
		return
	}
	d := fastDec{b: v}
	if d.i >= len(v) || v[0] != '[' {
		tc.ok = false
		return
	}
	d.i++
	tc.out = append(tc.out, '[')
	if d.ws() < len(v) && v[d.i] == ']' {
		tc.out = append(tc.out, ']')
		tc.ok = tc.ok && d.i+1 == len(v)
		return
	}
	for first := true; tc.ok; first = false {
		start := d.ws()
		if !d.skip() {
			tc.ok = false
			return
		}
		if !first {
			tc.out = append(tc.out, ',')
		}
		tc.str(v[start:d.i])
		if d.ws() >= len(v) {
			tc.ok = false
			return
		}
		if v[d.i] == ']' {
			tc.out = append(tc.out, ']')
			tc.ok = tc.ok && d.i+1 == len(v)
			return
		}
		if v[d.i] != ',' {
			tc.ok = false
			return
		}
		d.i++
	}
}

// object writes null or an object whose keys are plain and strictly
// increasing (as appendObject would sort them), each value by value.
func (tc *transcoder) object(v []byte, value func(v []byte)) {
	if v == nil || string(v) == "null" {
		tc.out = append(tc.out, "null"...)
		return
	}
	if v[0] != '{' {
		tc.ok = false
		return
	}
	tc.out = append(tc.out, '{')
	var prev []byte
	first := true
	d := fastDec{b: v}
	ok := d.object(func(key []byte, plain bool) bool {
		if !plain || !first && bytes.Compare(prev, key) >= 0 {
			return false
		}
		if !first {
			tc.out = append(tc.out, ',')
		}
		tc.out = append(tc.out, '"')
		tc.out = append(tc.out, key...)
		tc.out = append(tc.out, '"', ':')
		start := d.ws()
		if !d.skip() {
			return false
		}
		value(v[start:d.i])
		prev, first = key, false
		return tc.ok
	})
	tc.ok = tc.ok && ok && d.i == len(v)
	tc.out = append(tc.out, '}')
}

// metric writes a metric's value: null, or a number as appendJSONFloat
// writes it; any other value (one Metrics.UnmarshalJSON drops or reads
// from a string) is left to the decoder.
func (tc *transcoder) metric(v []byte) {
	if string(v) == "null" {
		tc.out = append(tc.out, "null"...)
		return
	}
	tc.float(v)
}

// float writes number v as appendJSONFloat does.
func (tc *transcoder) float(v []byte) {
	if !jsonNumber(v) {
		tc.ok = false
		return
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		tc.ok = false
		return
	}
	var ok bool
	tc.out, ok = appendJSONFloat(tc.out, f)
	tc.ok = tc.ok && ok
}

// raw writes a raw document (nil: null) compacted, as appendRawJSON does.
func (tc *transcoder) raw(v []byte) {
	if v == nil {
		tc.out = append(tc.out, "null"...)
		return
	}
	var ok bool
	tc.out, ok = appendRawJSON(tc.out, v, true)
	tc.ok = tc.ok && ok
}

// fields reads the object v of a nested struct whose members are names,
// each at most once and named exactly (other members skipped), and calls
// value with each name's index and value (nil when absent) in names'
// order.
func (tc *transcoder) fields(v []byte, names []string, value func(i int, v []byte)) {
	var spans [4]valueSpan
	d := fastDec{b: v}
	if !d.object(func(key []byte, plain bool) bool {
		if !plain {
			return false
		}
		for i, name := range names {
			if fieldIs(key, name) {
				if string(key) != name || spans[i].end != 0 {
					return false
				}
				start := d.ws()
				if !d.skip() {
					return false
				}
				spans[i] = valueSpan{start, d.i}
				return true
			}
		}
		return d.skip()
	}) || d.i != len(v) {
		tc.ok = false
		return
	}
	for i := range names {
		var fv []byte
		if sp := spans[i]; sp.end != 0 {
			fv = v[sp.start:sp.end]
		}
		value(i, fv)
	}
}

// parseInt reads an integer as json.Unmarshal reads one into an int64: no
// fraction, no exponent, in range.
func parseInt(v []byte) (int64, bool) {
	if !jsonNumber(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// jsonNumber reports whether v is one JSON number (the decoder's syntax).
func jsonNumber(v []byte) bool {
	d := fastDec{b: v}
	return d.number() != nil && d.i == len(v)
}
