package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unsafe"
)

// The binary caches (catalog, ancestry, registry state) share one encoding:
// uvarints, zig-zag varints, length-prefixed strings and little-endian
// float64s, appended with the Append functions and read back with a
// Decoder. A Decoder reads in place: every string it returns is a slice of
// the payload, so a cache of 100k records decodes with a handful of
// allocations instead of one per string (which had doubled load times).

// AppendString appends s with its length.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendFloat appends f as 8 little-endian bytes.
func AppendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// AppendBool appends v as one byte.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// Decoder reads what the Append functions wrote. The first read past the
// end (or a malformed varint) sets Err, after which every read returns a
// zero value, so callers check Err once at the end.
type Decoder struct {
	buf []byte
	all string // the whole payload viewed as a string; "" to copy strings
	pos int
	err error
}

// NewDecoder decodes payload in place. The caller hands the payload over:
// it must not be modified afterwards, since returned strings share it.
func NewDecoder(payload []byte) *Decoder {
	d := &Decoder{buf: payload}
	if len(payload) > 0 {
		d.all = unsafe.String(&payload[0], len(payload))
	}
	return d
}

// newCopyingDecoder decodes payload and copies the strings it returns (for
// a small header of a buffer the caller keeps using).
func newCopyingDecoder(payload []byte) *Decoder { return &Decoder{buf: payload} }

// Err is the first decoding error, wrapping ErrCacheInvalid.
func (d *Decoder) Err() error { return d.err }

// Rest is the undecoded remainder.
func (d *Decoder) Rest() []byte { return d.buf }

// Done is Err, or an error when bytes are left over.
func (d *Decoder) Done() error {
	if d.err == nil && len(d.buf) > 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrCacheInvalid, len(d.buf))
	}
	return d.err
}

func (d *Decoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated cache", ErrCacheInvalid)
	}
	d.buf = nil
}

func (d *Decoder) skip(n int) {
	d.buf, d.pos = d.buf[n:], d.pos+n
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.skip(n)
	return v
}

// Varint reads a signed varint.
func (d *Decoder) Varint() int64 {
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.skip(n)
	return v
}

// Int reads a signed varint as an int.
func (d *Decoder) Int() int { return int(d.Varint()) }

// Count reads an element count; a count larger than the bytes left (every
// element takes at least one) is an error, so a damaged cache cannot make
// the caller allocate gigabytes.
func (d *Decoder) Count() int {
	n := d.Uvarint()
	if n > uint64(len(d.buf)) {
		d.fail()
		return 0
	}
	return int(n)
}

// Bytes reads n raw bytes (a slice of the payload).
func (d *Decoder) Bytes(n int) []byte {
	if n < 0 || len(d.buf) < n {
		d.fail()
		return nil
	}
	out := d.buf[:n:n]
	d.skip(n)
	return out
}

// Str reads a string.
func (d *Decoder) Str() string {
	n := d.Uvarint()
	if d.err != nil || uint64(len(d.buf)) < n {
		d.fail()
		return ""
	}
	var out string
	if d.all != "" {
		out = d.all[d.pos : d.pos+int(n)]
	} else {
		out = string(d.buf[:n])
	}
	d.skip(int(n))
	return out
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if len(d.buf) < 1 {
		d.fail()
		return 0
	}
	v := d.buf[0]
	d.skip(1)
	return v
}

// Bool reads a byte written by AppendBool.
func (d *Decoder) Bool() bool { return d.Byte() != 0 }

// Float reads a float64 written by AppendFloat.
func (d *Decoder) Float() float64 {
	b := d.Bytes(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// pickStrings sets *dst[i] to the string value of the top-level member of
// the JSON object obj named names[i], matched as encoding/json matches a
// struct field (case-insensitively, the last occurrence winning), reading
// only the picked values: the rest of obj is skipped without decoding. ok
// is what json.Unmarshal of obj into a struct of those string fields would
// report (false when obj is not an object or a picked value is neither a
// string nor null). scanned is false when obj is not plain, well-formed
// JSON as far as this scanner can tell; the caller then uses
// json.Unmarshal. (The catalog slims every record's novelty_guard and
// decision_packet, ~2 KB each: decoding them whole was 30% of a catalog
// rebuild at 100k runs.)
func pickStrings(obj []byte, names []string, dst []*string) (ok, scanned bool) {
	i := skipSpace(obj, 0)
	if i == len(obj) {
		return false, false
	}
	if obj[i] != '{' {
		// Only an object decodes into a struct (null is handled by callers).
		return false, obj[i] == '[' || obj[i] == '"' || obj[i] == '-' || obj[i] >= '0' && obj[i] <= '9' || obj[i] == 't' || obj[i] == 'f'
	}
	i = skipSpace(obj, i+1)
	ok = true
	if i < len(obj) && obj[i] == '}' {
		return ok, skipSpace(obj, i+1) == len(obj)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return false, false
		}
		end := skipString(obj, i)
		if end < 0 {
			return false, false
		}
		rawKey := obj[i+1 : end-1]
		var key []byte
		if plainASCII(rawKey) {
			key = rawKey
		} else {
			var k string
			if json.Unmarshal(obj[i:end], &k) != nil {
				return false, false
			}
			key = []byte(k)
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return false, false
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		if vend < 0 {
			return false, false
		}
		for k, name := range names {
			if bytes.EqualFold(key, []byte(name)) {
				if !pickString(obj[i:vend], dst[k]) {
					ok = false
				}
				break
			}
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) {
			return false, false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return ok, skipSpace(obj, i+1) == len(obj)
		default:
			return false, false
		}
	}
}

// plainASCII reports whether b holds only printable ASCII without a
// backslash: a key that is its own unquoted form.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// pickString is json.Unmarshal(v, dst) for a string field: a string is
// unquoted into *dst, null changes nothing, anything else is an error
// (false). Plain strings are copied without going through encoding/json.
func pickString(v []byte, dst *string) bool {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && plainASCII(v[1:len(v)-1]) {
		*dst = string(v[1 : len(v)-1])
		return true
	}
	return json.Unmarshal(v, dst) == nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringStops are the bytes skipString looks at: the quote, the escape
// and control characters; structural those skipValue counts nesting by.
var stringStops, structural = func() (stops, structural [256]bool) {
	for c := range 0x20 {
		stops[c] = true
	}
	stops['"'], stops['\\'] = true, true
	for _, c := range `"{}[]` {
		structural[c] = true
	}
	return stops, structural
}()

// skipString returns the index after the string starting at b[i] (a
// quote), or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		for j < len(b) && !stringStops[b[j]] {
			j++ // the plain run of the string, a table lookup a byte
		}
		if j == len(b) {
			break
		}
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		default:
			if b[j] < 0x20 {
				return -1
			}
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i], or -1.
// Nested values are only counted, not checked: pickStrings' callers hold
// values encoding/json already accepted, and the transcoder checks each
// value it writes (transcodeLine).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			for j < len(b) && !structural[b[j]] {
				j++
			}
			if j == len(b) {
				break
			}
			switch b[j] {
			case '"':
				e := skipString(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
