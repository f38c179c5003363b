package ledger

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A run's record travels between machines as its canonical line, the
// bytes MarshalRecord gives (encoding/json, HTML left unescaped): the blob
// a sync folds is that line, so one run's blob is equal on every machine
// whatever wrote its ledger line (the Python tool's ", " separators, keys
// in another order). A first push re-encodes every line, and encoding/json
// spent 4.1 s of a 100,000-run first push on it, 2.8 s of that checking
// and compacting the novelty guard and decision packet it already had as
// raw JSON. AppendRecordJSON writes the same bytes directly;
// TestAppendRecordJSONMatchesMarshal and FuzzAppendRecordJSON hold it to
// MarshalRecord. MarshalRecord stays the definition, and AppendRecordJSON
// hands it whatever it does not write itself (a record with a Source, a
// value encoding/json refuses).

// AppendRecordJSON appends MarshalRecord(r)'s bytes to dst (and the error
// MarshalRecord gives, if any), several times faster.
func AppendRecordJSON(dst []byte, r *Record) ([]byte, error) {
	return appendRecordJSON(dst, r, false)
}

// appendRecordJSON is AppendRecordJSON; checked says r's NoveltyGuard and
// DecisionPacket are slices of a line the decoder accepted (valid JSON).
func appendRecordJSON(dst []byte, r *Record, checked bool) ([]byte, error) {
	if out, ok := appendRecord(dst, r, checked); ok {
		return out, nil
	}
	line, err := MarshalRecord(r)
	if err != nil {
		return dst, err
	}
	return append(dst, line...), nil
}

// appendRecord is AppendRecordJSON's own encoding; false: use
// MarshalRecord (dst's extension is then garbage).
func appendRecord(b []byte, r *Record, checked bool) ([]byte, bool) {
	if len(r.Source) > 0 {
		return b, false // any shape: encoding/json's
	}
	ok := true
	b = append(b, '{')
	if r.SchemaVersion != 0 {
		b = append(b, `"schema_version":`...)
		b = strconv.AppendInt(b, int64(r.SchemaVersion), 10)
		b = append(b, ',')
	}
	b = append(b, `"run_id":`...)
	b = appendLineString(b, string(r.RunID))
	b = append(b, `,"timestamp_utc":`...)
	b = appendLineString(b, r.Timestamp)
	b = append(b, `,"branch":`...)
	b = appendLineString(b, r.Branch)
	b = append(b, `,"commit":`...)
	b = appendLineString(b, r.Commit)
	if r.CommitFull != "" {
		b = append(b, `,"commit_full":`...)
		b = appendLineString(b, r.CommitFull)
	}
	b = append(b, `,"parent_commit":`...)
	if r.ParentCommit == nil {
		b = append(b, "null"...)
	} else {
		b = appendLineString(b, *r.ParentCommit)
	}
	if r.Dirty != nil {
		b = append(b, `,"dirty":`...)
		b = strconv.AppendBool(b, *r.Dirty)
	}
	b = append(b, `,"family":`...)
	b = appendLineString(b, r.Family)
	b = append(b, `,"status":`...)
	b = appendLineString(b, r.Status)
	b = append(b, `,"description":`...)
	b = appendLineString(b, r.Description)
	b = append(b, `,"hypothesis":`...)
	b = appendLineString(b, r.Hypothesis)
	b = append(b, `,"tags":`...)
	b = appendLineStrings(b, r.Tags)
	b = append(b, `,"notes":`...)
	b = appendLineString(b, r.Notes)
	b = append(b, `,"metrics":`...)
	if b, ok = appendMetrics(b, r.Metrics); !ok {
		return b, false
	}
	b = append(b, `,"error":`...)
	if r.Error == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"summary":`...)
		b = appendLineString(b, r.Error.Summary)
		b = append(b, `,"tail":`...)
		b = appendLineStrings(b, r.Error.Tail)
		b = append(b, `,"source":`...)
		b = appendLineString(b, r.Error.Source)
		b = append(b, '}')
	}
	b = append(b, `,"artifacts":`...)
	b = appendStringMap(b, r.Artifacts)
	if r.LineageRoot != "" {
		b = append(b, `,"lineage_root":`...)
		b = appendLineString(b, r.LineageRoot)
	}
	if r.Seed != nil {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, *r.Seed, 10)
	}
	if r.Replicate != "" {
		b = append(b, `,"replicate":`...)
		b = appendLineString(b, r.Replicate)
	}
	if h := r.Hardware; h != nil {
		b = append(b, `,"hardware":{`...)
		sep := false
		if h.Host != "" {
			b = append(b, `"host":`...)
			b = appendLineString(b, h.Host)
			sep = true
		}
		if h.Accelerator != "" {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"accelerator":`...)
			b = appendLineString(b, h.Accelerator)
		}
		b = append(b, '}')
	}
	if it := r.Items; it != nil {
		b = append(b, `,"items":{"count":`...)
		b = strconv.AppendInt(b, int64(it.Count), 10)
		b = append(b, `,"mean":`...)
		if b, ok = appendJSONFloat(b, it.Mean); !ok {
			return b, false
		}
		if it.Binary {
			b = append(b, `,"binary":true`...)
		}
		b = append(b, '}')
	}
	b = append(b, `,"novelty_guard":`...)
	if b, ok = appendRawJSON(b, r.NoveltyGuard, checked); !ok {
		return b, false
	}
	b = append(b, `,"decision_packet":`...)
	if b, ok = appendRawJSON(b, r.DecisionPacket, checked); !ok {
		return b, false
	}
	if r.Tie {
		b = append(b, `,"tie":true`...)
	}
	if c := r.Correction; c != nil {
		b = append(b, `,"correction":{"kind":`...)
		b = appendLineString(b, c.Kind)
		b = append(b, `,"run_id":`...)
		b = appendLineString(b, string(c.RunID))
		b = append(b, `,"text":`...)
		b = appendLineString(b, c.Text)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// jsonSafe marks the ASCII bytes encoding/json copies into a string as
// they are (HTML not escaped).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendLineString is encoding/json's string encoding with HTML left
// unescaped: invalid UTF-8 becomes \ufffd, U+2028 and U+2029 are escaped.
func appendLineString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendLineStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLineString(b, s)
	}
	return append(b, ']')
}

// appendObject encodes m as encoding/json does, its keys sorted and each
// value written by value (false: a value it cannot write).
func appendObject[V any](b []byte, m map[string]V, value func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLineString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = value(b, m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendStringMap encodes m with its keys sorted, as encoding/json does.
func appendStringMap(b []byte, m map[string]string) []byte {
	b, _ = appendObject(b, m, func(b []byte, v string) ([]byte, bool) { return appendLineString(b, v), true })
	return b
}

func appendMetrics(b []byte, m Metrics) ([]byte, bool) {
	return appendObject(b, m, func(b []byte, v *float64) ([]byte, bool) {
		if v == nil {
			return append(b, "null"...), true
		}
		return appendJSONFloat(b, *v)
	})
}

// appendJSONFloat is encoding/json's float64 encoding; false for NaN and
// infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07, not 1e-7: as encoding/json trims it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendRawJSON appends raw compacted (encoding/json's json.RawMessage
// encoding: null when nil, whitespace outside strings dropped). Unless
// checked (raw is a slice of a line the decoder accepted), it first checks
// that raw is one JSON value; false when it is not.
func appendRawJSON(b []byte, raw RawJSON, checked bool) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	if !checked {
		d := fastDec{b: raw}
		if !d.skip() || d.ws() != len(raw) {
			return b, false
		}
	}
	start := 0
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case '"':
			// To the closing quote: the first one after an even number of
			// backslashes (a valid string holds no other).
			i++
			for {
				q := bytes.IndexByte(raw[i:], '"')
				if q < 0 {
					return b, false
				}
				i += q + 1
				k := i - 2
				for k >= 0 && raw[k] == '\\' {
					k--
				}
				if (i-2-k)%2 == 0 {
					break
				}
			}
		case ' ', '\t', '\n', '\r':
			b = append(b, raw[start:i]...)
			for i++; i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r'); i++ {
			}
			start = i
		default:
			i++
		}
	}
	return append(b, raw[start:]...), true
}
