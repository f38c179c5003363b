package evidence

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseFast decodes the common shape of an item line without
// encoding/json, which took ~15 µs a line (1.5 s for 100k items): one flat
// object whose strings have no escapes and whose values are strings,
// numbers, booleans or null. ok is false for anything else (escapes, nested
// values such as "detail", keys that differ from ours only in case, numbers
// out of range, malformed JSON): the caller then decodes the line with
// encoding/json, so both paths accept and reject exactly the same lines
// (FuzzParseFast checks that they agree).
func parseFast(raw []byte, sl *slab) (l itemLine, ok bool) {
	p := fastParser{b: raw}
	p.ws()
	if !p.eat('{') {
		return l, false
	}
	p.ws()
	if p.eat('}') {
		return l, p.end()
	}
	for {
		p.ws()
		key, ok := p.str()
		if !ok {
			return l, false
		}
		p.ws()
		if !p.eat(':') {
			return l, false
		}
		p.ws()
		switch key {
		case "id":
			if p.null() {
				l.ID = nil
			} else if s, ok := p.str(); ok {
				l.ID = &s
			} else {
				return l, false
			}
		case "group":
			if p.null() {
				// encoding/json leaves the string as it was
			} else if b, ok := p.strBytes(); ok {
				l.Group = sl.intern(b)
			} else {
				return l, false
			}
		case "score":
			if p.null() {
				l.Score = nil
			} else if f, ok := p.num(); ok {
				l.Score = sl.float(f)
			} else {
				return l, false
			}
		case "correct":
			if p.null() {
				l.Correct = nil
			} else if v, ok := p.boolean(); ok {
				l.Correct = sl.bool(v)
			} else {
				return l, false
			}
		case "detail":
			if !p.null() {
				return l, false // an object: encoding/json keeps it verbatim
			}
			l.Detail = nil
		default:
			for _, k := range [...]string{"id", "group", "score", "correct", "detail"} {
				if strings.EqualFold(key, k) {
					return l, false // encoding/json would match it case-insensitively
				}
			}
			if !p.scalar() {
				return l, false
			}
		}
		p.ws()
		if p.eat('}') {
			return l, p.end()
		}
		if !p.eat(',') {
			return l, false
		}
	}
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *fastParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end: nothing but whitespace after the object.
func (p *fastParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

func (p *fastParser) lit(s string) bool {
	if strings.HasPrefix(string(p.b[p.i:]), s) {
		p.i += len(s)
		return true
	}
	return false
}

func (p *fastParser) null() bool { return p.lit("null") }

func (p *fastParser) boolean() (bool, bool) {
	switch {
	case p.lit("true"):
		return true, true
	case p.lit("false"):
		return false, true
	}
	return false, false
}

// slab hands out the pointers and group strings of many items from a few
// allocations: chunks that are never grown in place (so earlier pointers
// stay valid) and one copy of each group name.
type slab struct {
	f      []float64
	b      []bool
	groups map[string]string
}

const slabChunk = 4096

func (s *slab) float(v float64) *float64 {
	if len(s.f) == cap(s.f) {
		s.f = make([]float64, 0, slabChunk)
	}
	s.f = append(s.f, v)
	return &s.f[len(s.f)-1]
}

func (s *slab) bool(v bool) *bool {
	if len(s.b) == cap(s.b) {
		s.b = make([]bool, 0, slabChunk)
	}
	s.b = append(s.b, v)
	return &s.b[len(s.b)-1]
}

// intern returns b as a string, shared with earlier equal groups (up to
// 1024 distinct names; more are copied each time).
func (s *slab) intern(b []byte) string {
	if g, ok := s.groups[string(b)]; ok {
		return g
	}
	g := string(b)
	if s.groups == nil {
		s.groups = map[string]string{}
	}
	if len(s.groups) < 1024 {
		s.groups[g] = g
	}
	return g
}

// str reads a string without escapes or control characters, valid UTF-8.
func (p *fastParser) str() (string, bool) {
	b, ok := p.strBytes()
	return string(b), ok
}

// strBytes is str without the copy (a slice of the line).
func (p *fastParser) strBytes() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	ascii := true
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false // encoding/json replaces bad bytes with U+FFFD
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// num reads a number in JSON's grammar that fits a float64.
func (p *fastParser) num() (float64, bool) {
	start := p.i
	p.eat('-')
	switch {
	case p.eat('0'):
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return 0, false
	}
	if p.eat('.') && !p.digits() {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if !p.eat('+') {
			p.eat('-')
		}
		if !p.digits() {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	return f, err == nil
}

func (p *fastParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// scalar skips the value of a key we do not keep: a string, number,
// boolean or null (anything else goes the slow way).
func (p *fastParser) scalar() bool {
	if p.null() {
		return true
	}
	if _, ok := p.boolean(); ok {
		return true
	}
	if p.i < len(p.b) && p.b[p.i] == '"' {
		_, ok := p.strBytes()
		return ok
	}
	_, ok := p.num()
	return ok
}
