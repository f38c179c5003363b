package ledger

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// A line memorylab wrote is already its record's canonical line
// (AppendLocked writes MarshalRecord's bytes), and a first push of 100,000
// of them decoded each in full and encoded it again only to get the bytes
// it had read: 2.7 s of CPU at 100k runs. canonicalLine proves in one pass,
// without building the record, that a line is exactly AppendRecordJSON's
// encoding of the record it decodes to, walking the fields in appendRecord's
// order with appendRecord's rules (omitted when empty, null for nil, keys
// sorted, encoding/json's string escapes and float formatting, compact raw
// JSON). It is exact by refusing to guess: anything it cannot prove (a key
// out of order or in another case, whitespace, an escape encoding/json
// would not write, a metric that is not a plain number, a Source) is
// false, and the caller decodes and encodes the line as before.
// FuzzCanonicalLine holds it to json.Unmarshal and MarshalRecord.

// canonFields is what canonicalLine reads of a line besides proving it
// canonical: what the fold needs of a record.
type canonFields struct {
	schema    int
	runID     []byte // raw bytes: a run id with an escape is left to the decoder
	timestamp []byte // likewise
}

// canonicalLine reports whether body (a trimmed ledger line) is exactly
// the canonical line of the record json.Unmarshal decodes it to, with
// c the record's schema version, run id and timestamp; false says nothing
// about the line (decode it).
func canonicalLine(body []byte) (c canonFields, ok bool) {
	s := canonScan{b: body}
	if !s.lit(`{`) {
		return c, false
	}
	if s.lit(`"schema_version":`) {
		if c.schema, ok = s.int(); !ok || c.schema == 0 || !s.lit(`,`) {
			return c, false
		}
	}
	if !s.lit(`"run_id":`) {
		return c, false
	}
	if c.runID, ok = s.plainStr(); !ok {
		return c, false
	}
	if !s.lit(`,"timestamp_utc":`) {
		return c, false
	}
	if c.timestamp, ok = s.plainStr(); !ok {
		return c, false
	}
	ok = s.lit(`,"branch":`) && s.str() && s.lit(`,"commit":`) && s.str() &&
		s.opt(`,"commit_full":`, s.nonEmptyStr) &&
		s.lit(`,"parent_commit":`) && (s.lit(`null`) || s.str()) &&
		s.opt(`,"dirty":`, func() bool { return s.lit(`true`) || s.lit(`false`) }) &&
		s.lit(`,"family":`) && s.str() && s.lit(`,"status":`) && s.str() &&
		s.lit(`,"description":`) && s.str() && s.lit(`,"hypothesis":`) && s.str() &&
		s.lit(`,"tags":`) && s.strs() && s.lit(`,"notes":`) && s.str() &&
		s.lit(`,"metrics":`) && s.object(s.metric) &&
		s.lit(`,"error":`) && (s.lit(`null`) ||
		s.lit(`{"summary":`) && s.str() && s.lit(`,"tail":`) && s.strs() && s.lit(`,"source":`) && s.str() && s.lit(`}`)) &&
		s.lit(`,"artifacts":`) && s.object(s.str) &&
		s.opt(`,"lineage_root":`, s.nonEmptyStr) &&
		s.opt(`,"seed":`, func() bool { _, ok := s.int64(); return ok }) &&
		s.opt(`,"replicate":`, s.nonEmptyStr) &&
		s.opt(`,"hardware":`, s.hardware) &&
		s.opt(`,"items":`, s.items) &&
		s.lit(`,"novelty_guard":`) && s.raw() &&
		s.lit(`,"decision_packet":`) && s.raw() &&
		s.opt(`,"tie":`, func() bool { return s.lit(`true`) }) &&
		s.opt(`,"correction":`, func() bool {
			return s.lit(`{"kind":`) && s.str() && s.lit(`,"run_id":`) && s.str() && s.lit(`,"text":`) && s.str() && s.lit(`}`)
		}) &&
		s.lit(`}`) && s.i == len(s.b)
	return c, ok
}

// canonScan reads canonical JSON from b at i.
type canonScan struct {
	b []byte
	i int
}

// lit moves past want if it is next.
func (s *canonScan) lit(want string) bool {
	if len(s.b)-s.i >= len(want) && string(s.b[s.i:s.i+len(want)]) == want {
		s.i += len(want)
		return true
	}
	return false
}

// opt reads key and its value (a field omitted when empty) when key is
// next; true when it is not there.
func (s *canonScan) opt(key string, value func() bool) bool {
	return !s.lit(key) || value()
}

// str moves past a string as appendLineString writes one.
func (s *canonScan) str() bool {
	_, _, ok := s.scanStr()
	return ok
}

// nonEmptyStr is str for a field omitted when empty.
func (s *canonScan) nonEmptyStr() bool {
	raw, _, ok := s.scanStr()
	return ok && len(raw) > 0
}

// plainStr is str for a string without escapes, returned.
func (s *canonScan) plainStr() ([]byte, bool) {
	raw, plain, ok := s.scanStr()
	return raw, ok && plain
}

// scanStr moves past a string as appendLineString writes one and returns
// it between its quotes; plain: without escapes. appendLineString copies
// valid UTF-8 but U+2028 and U+2029, and escapes the rest one way each.
func (s *canonScan) scanStr() (raw []byte, plain, ok bool) {
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	plain = true
	for j := start; j < len(b); {
		c := b[j]
		if c < utf8.RuneSelf {
			switch {
			case jsonSafe[c]:
				j++
			case c == '"':
				s.i = j + 1
				return b[start:j], plain, true
			case c == '\\':
				plain = false
				n := canonEscape(b[j:])
				if n == 0 {
					return nil, false, false
				}
				j += n
			default:
				return nil, false, false // a control byte, written escaped
			}
			continue
		}
		r, size := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return nil, false, false
		}
		j += size
	}
	return nil, false, false
}

// canonEscape is the length of the escape at the start of b when it is
// the one appendLineString writes for its character, else 0.
func canonEscape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(b) < 6 {
			return 0
		}
		switch u := string(b[2:6]); {
		case u == "2028" || u == "2029":
			return 6
		case u[0] == '0' && u[1] == '0' && (u[2] == '0' || u[2] == '1') && isLowerHex(u[3]):
			switch c := (u[2]-'0')<<4 | hexValue(u[3]); c {
			case '\b', '\f', '\n', '\r', '\t':
				return 0 // written as \b, \f, \n, \r, \t
			}
			return 6
		}
	}
	return 0
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func hexValue(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// strs moves past null or an array of strings (appendLineStrings).
func (s *canonScan) strs() bool {
	if s.lit(`null`) {
		return true
	}
	if !s.lit(`[`) {
		return false
	}
	if s.lit(`]`) {
		return true
	}
	for {
		if !s.str() {
			return false
		}
		if s.lit(`]`) {
			return true
		}
		if !s.lit(`,`) {
			return false
		}
	}
}

// object moves past null or an object as appendObject writes one: keys
// without escapes (their order is then their bytes'), strictly increasing,
// each value read by value.
func (s *canonScan) object(value func() bool) bool {
	if s.lit(`null`) {
		return true
	}
	if !s.lit(`{`) {
		return false
	}
	if s.lit(`}`) {
		return true
	}
	var prev []byte
	for first := true; ; first = false {
		key, ok := s.plainStr()
		if !ok || !first && bytes.Compare(prev, key) >= 0 || !s.lit(`:`) || !value() {
			return false
		}
		prev = key
		if s.lit(`}`) {
			return true
		}
		if !s.lit(`,`) {
			return false
		}
	}
}

// metric moves past a metric's value as appendMetrics writes it: null or
// a number in appendJSONFloat's form.
func (s *canonScan) metric() bool {
	return s.lit(`null`) || s.float()
}

// number moves past a JSON number and returns its text.
func (s *canonScan) number() []byte {
	d := fastDec{b: s.b, i: s.i}
	n := d.number()
	s.i = d.i
	return n
}

// float moves past a number that appendJSONFloat writes as it is.
func (s *canonScan) float() bool {
	n := s.number()
	if n == nil {
		return false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return false
	}
	var buf [32]byte
	out, ok := appendJSONFloat(buf[:0], f)
	return ok && bytes.Equal(out, n)
}

// int64 moves past an integer as strconv.AppendInt writes it.
func (s *canonScan) int64() (int64, bool) {
	n := s.number()
	if n == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [24]byte
	return v, bytes.Equal(strconv.AppendInt(buf[:0], v, 10), n)
}

func (s *canonScan) int() (int, bool) {
	v, ok := s.int64()
	return int(v), ok && int64(int(v)) == v
}

// hardware moves past a Hardware as appendRecord writes it.
func (s *canonScan) hardware() bool {
	if !s.lit(`{`) {
		return false
	}
	host := s.lit(`"host":`)
	if host && !s.nonEmptyStr() {
		return false
	}
	if host && s.lit(`,"accelerator":`) || !host && s.lit(`"accelerator":`) {
		if !s.nonEmptyStr() {
			return false
		}
	}
	return s.lit(`}`)
}

// items moves past an ItemsInfo as appendRecord writes it.
func (s *canonScan) items() bool {
	if !s.lit(`{"count":`) {
		return false
	}
	if _, ok := s.int(); !ok {
		return false
	}
	return s.lit(`,"mean":`) && s.float() && s.opt(`,"binary":`, func() bool { return s.lit(`true`) }) && s.lit(`}`)
}

// raw moves past a RawJSON as appendRawJSON writes it from a line the
// decoder accepted: one JSON value, as the decoder's own syntax check
// (fastDec.skip) reads it, with no whitespace outside its strings.
func (s *canonScan) raw() bool {
	if s.i >= len(s.b) || s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r' {
		return false
	}
	d := fastDec{b: s.b, i: s.i}
	if !d.skip() || d.spaced {
		return false
	}
	s.i = d.i
	return true
}
