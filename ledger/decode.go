package ledger

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The bulk readers (a first use's Pass, doctor's walk) decode every line of
// the ledger. encoding/json spent most of their time checking the syntax of
// and building fields nobody reads (the notes, a crash's traceback, the
// ~2 KB novelty guard and decision packet): at 100k runs 4.0 s of doctor's
// 7 s and 4.5 s of a first use's 9.5 s. decodeFast reads a line in one
// pass, checking its syntax and decoding only the fields those readers
// use, with encoding/json's semantics for them. It is exact by refusing to
// guess: whenever a line is anything but plain (a key with an escape or a
// non-ASCII byte, a field given twice, a value of the wrong type, a number
// out of range, deep nesting, any syntax error) it reports false, and the
// caller decodes the line with encoding/json as before, which gives the
// same record or the same warning. FuzzDecodeFast holds it to that.

// DecodeBulk decodes body, a trimmed ledger line, into r (zero) for a
// reader of every line that needs neither the notes, nor a crash's
// traceback (Error.Tail), nor NoveltyGuard and DecisionPacket beyond this
// call (they alias body): it accepts and refuses what json.Unmarshal does,
// with the same error, and fills every other field alike, several times
// faster (decodeFast). doctor's walk uses it.
func DecodeBulk(body []byte, r *Record) error {
	if decodeFast(body, r, fastFields{artifacts: true}) {
		return nil
	}
	*r = Record{}
	return json.Unmarshal(body, r)
}

// DecodePlain decodes body, a trimmed ledger line, into r (zero) when it
// is plain — what decodeFast reads exactly, which every line memorylab
// writes is — and reports whether it did. r then holds every field but
// Notes and Error.Tail (NoveltyGuard and DecisionPacket alias body). false
// means: decode body with encoding/json (r is then garbage). A pull uses it
// to append an arriving record's line as it came rather than decode and
// re-encode it whole.
func DecodePlain(body []byte, r *Record) bool {
	return decodeFast(body, r, fastFields{artifacts: true})
}

// fastFields says what decodeFast decodes besides the fields every bulk
// reader needs: artifacts (doctor checks the archive); full: the notes and
// a crash's traceback too, so the record is json.Unmarshal's in every
// field (a sync's fold re-encodes it).
type fastFields struct {
	artifacts bool
	full      bool
}

// decodeFast decodes body (a trimmed ledger line) into r, which must be
// zero. true means encoding/json would decode body into a Record without
// error and agree on every field but Notes and Error.Tail (left empty, and
// Artifacts unless want.artifacts); NoveltyGuard and DecisionPacket alias
// body. false means: decode with encoding/json (r is then garbage).
func decodeFast(body []byte, r *Record, want fastFields) bool {
	d := fastDec{b: body}
	var seen uint32
	ok := d.object(func(key []byte, plain bool) bool {
		if !plain {
			return false // a key that might fold to a field's name (ſ, K) or hide one behind an escape
		}
		f := recordField(key)
		if f < 0 {
			return d.skip()
		}
		if seen&(1<<f) != 0 {
			return false // encoding/json merges or keeps the earlier value: leave it to it
		}
		seen |= 1 << f
		return d.recordValue(f, r, want)
	})
	return ok && d.ws() == len(d.b)
}

// Record fields, in the struct's order.
const (
	fSchema = iota
	fRunID
	fTimestamp
	fBranch
	fCommit
	fCommitFull
	fParent
	fDirty
	fFamily
	fStatus
	fDescription
	fHypothesis
	fTags
	fNotes
	fMetrics
	fError
	fArtifacts
	fLineageRoot
	fSeed
	fReplicate
	fHardware
	fItems
	fSource
	fGuard
	fPacket
	fTie
	fCorrection
)

var recordFieldNames = map[string]int{
	"schema_version": fSchema, "run_id": fRunID, "timestamp_utc": fTimestamp, "branch": fBranch,
	"commit": fCommit, "commit_full": fCommitFull, "parent_commit": fParent, "dirty": fDirty,
	"family": fFamily, "status": fStatus, "description": fDescription, "hypothesis": fHypothesis,
	"tags": fTags, "notes": fNotes, "metrics": fMetrics, "error": fError, "artifacts": fArtifacts,
	"lineage_root": fLineageRoot, "seed": fSeed, "replicate": fReplicate, "hardware": fHardware,
	"items": fItems, "source": fSource, "novelty_guard": fGuard, "decision_packet": fPacket,
	"tie": fTie, "correction": fCorrection,
}

// recordField is the field a key names, matched as encoding/json does
// (exactly or case-insensitively: for the plain ASCII keys object passes
// on, ASCII folding is bytes.EqualFold), or -1.
func recordField(key []byte) int {
	var buf [16]byte
	if len(key) > len(buf) {
		return -1
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	if f, ok := recordFieldNames[string(buf[:len(key)])]; ok {
		return f
	}
	return -1
}

// fieldIs reports whether key (plain ASCII) names name, case-insensitively.
func fieldIs(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

func (d *fastDec) recordValue(f int, r *Record, want fastFields) bool {
	switch f {
	case fSchema:
		return d.int(&r.SchemaVersion)
	case fRunID:
		var s string
		ok := d.str(&s)
		r.RunID = RunID(s)
		return ok
	case fTimestamp:
		return d.str(&r.Timestamp)
	case fBranch:
		return d.str(&r.Branch)
	case fCommit:
		return d.str(&r.Commit)
	case fCommitFull:
		return d.str(&r.CommitFull)
	case fParent:
		if d.null() {
			return true
		}
		r.ParentCommit = new(string)
		return d.str(r.ParentCommit)
	case fDirty:
		if d.null() {
			return true
		}
		r.Dirty = new(bool)
		return d.bool(r.Dirty)
	case fFamily:
		return d.str(&r.Family)
	case fStatus:
		return d.str(&r.Status)
	case fDescription:
		return d.str(&r.Description)
	case fHypothesis:
		return d.str(&r.Hypothesis)
	case fTags:
		return d.strings(&r.Tags, true)
	case fNotes:
		if want.full {
			return d.str(&r.Notes)
		}
		return d.str(nil)
	case fMetrics:
		return d.metrics(&r.Metrics)
	case fError:
		if d.null() {
			return true
		}
		r.Error = &ErrorInfo{}
		var seen uint8
		return d.object(func(key []byte, plain bool) bool {
			return plain && d.structField(key, &seen, []string{"summary", "tail", "source"}, func(i int) bool {
				switch i {
				case 0:
					return d.str(&r.Error.Summary)
				case 1:
					return d.strings(&r.Error.Tail, want.full)
				}
				return d.str(&r.Error.Source)
			})
		})
	case fArtifacts:
		return d.stringMap(&r.Artifacts, want.artifacts)
	case fLineageRoot:
		return d.str(&r.LineageRoot)
	case fSeed:
		if d.null() {
			return true
		}
		r.Seed = new(int64)
		return d.int64(r.Seed)
	case fReplicate:
		return d.str(&r.Replicate)
	case fHardware:
		if d.null() {
			return true
		}
		r.Hardware = &Hardware{}
		var seen uint8
		return d.object(func(key []byte, plain bool) bool {
			return plain && d.structField(key, &seen, []string{"host", "accelerator"}, func(i int) bool {
				if i == 0 {
					return d.str(&r.Hardware.Host)
				}
				return d.str(&r.Hardware.Accelerator)
			})
		})
	case fItems:
		if d.null() {
			return true
		}
		r.Items = &ItemsInfo{}
		var seen uint8
		return d.object(func(key []byte, plain bool) bool {
			return plain && d.structField(key, &seen, []string{"count", "mean", "binary"}, func(i int) bool {
				switch i {
				case 0:
					return d.int(&r.Items.Count)
				case 1:
					return d.float(&r.Items.Mean)
				}
				return d.bool(&r.Items.Binary)
			})
		})
	case fSource:
		// Rare (imports) and of any shape: encoding/json decodes it.
		start := d.ws()
		if !d.skip() {
			return false
		}
		return json.Unmarshal(d.b[start:d.i], &r.Source) == nil
	case fGuard, fPacket:
		start := d.ws()
		if !d.skip() {
			return false
		}
		if f == fGuard {
			r.NoveltyGuard = RawJSON(d.b[start:d.i:d.i])
		} else {
			r.DecisionPacket = RawJSON(d.b[start:d.i:d.i])
		}
		return true
	case fTie:
		return d.bool(&r.Tie)
	case fCorrection:
		if d.null() {
			return true
		}
		r.Correction = &Correction{}
		var seen uint8
		return d.object(func(key []byte, plain bool) bool {
			return plain && d.structField(key, &seen, []string{"kind", "run_id", "text"}, func(i int) bool {
				switch i {
				case 0:
					return d.str(&r.Correction.Kind)
				case 1:
					var s string
					ok := d.str(&s)
					r.Correction.RunID = RunID(s)
					return ok
				}
				return d.str(&r.Correction.Text)
			})
		})
	}
	return false
}

// structField decodes the member key of a nested struct whose fields are
// names (at most 8) with value(i), skipping unknown members; a field given
// twice is left to encoding/json.
func (d *fastDec) structField(key []byte, seen *uint8, names []string, value func(i int) bool) bool {
	for i, name := range names {
		if fieldIs(key, name) {
			if *seen&(1<<i) != 0 {
				return false
			}
			*seen |= 1 << i
			return value(i)
		}
	}
	return d.skip()
}

// fastDec reads JSON from b at i; spaced records that it skipped
// whitespace (canonicalLine's raw JSON has none).
type fastDec struct {
	b      []byte
	i      int
	depth  int
	spaced bool
}

// maxFastDepth bounds the nesting decodeFast follows (encoding/json's own
// limit, 10000, is left to encoding/json).
const maxFastDepth = 200

// ws skips JSON whitespace and returns the position.
func (d *fastDec) ws() int {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
			d.spaced = true
		default:
			return d.i
		}
	}
	return d.i
}

// object reads an object, calling member with each key (between its
// quotes; plain: ASCII without escapes) with d at the member's value.
func (d *fastDec) object(member func(key []byte, plain bool) bool) bool {
	if d.ws() >= len(d.b) || d.b[d.i] != '{' {
		return false
	}
	d.i++
	if d.ws() < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return true
	}
	for {
		if d.ws() >= len(d.b) || d.b[d.i] != '"' {
			return false
		}
		start := d.i + 1
		end, plain := d.scanString()
		if end < 0 {
			return false
		}
		key := d.b[start : end-1]
		if d.ws() >= len(d.b) || d.b[d.i] != ':' {
			return false
		}
		d.i++
		if !member(key, plain) {
			return false
		}
		if d.ws() >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// strSpecial marks the bytes scanString stops at.
var strSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for c := 0x80; c < 256; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// scanString checks the string at d.i (a quote) and moves past it. end is
// the index after its closing quote, or -1 when it is not a valid JSON
// string; plain reports that it has no escape and only ASCII bytes.
func (d *fastDec) scanString() (end int, plain bool) {
	b := d.b
	j := d.i + 1
	plain = true
	for {
		for j < len(b) && !strSpecial[b[j]] {
			j++
		}
		if j >= len(b) {
			return -1, false
		}
		switch c := b[j]; {
		case c == '"':
			d.i = j + 1
			return j + 1, plain
		case c == '\\':
			plain = false
			if j+1 >= len(b) {
				return -1, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return -1, false
				}
				for _, h := range b[j+2 : j+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1, false
					}
				}
				j += 6
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		default: // a byte of a multi-byte sequence: encoding/json's syntax accepts any
			plain = false
			j++
		}
	}
}

// str decodes a string or null (the zero string) into *dst (nil: only
// checked). Strings with escapes or invalid UTF-8 are unquoted by
// encoding/json itself.
func (d *fastDec) str(dst *string) bool {
	if d.null() {
		if dst != nil {
			*dst = ""
		}
		return true
	}
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false
	}
	start := d.i
	end, plain := d.scanString()
	if end < 0 {
		return false
	}
	if dst == nil {
		return true
	}
	raw := d.b[start+1 : end-1]
	if plain || !hasEscape(raw) && utf8.Valid(raw) {
		*dst = string(raw)
		return true
	}
	var u string // not dst: handing it to encoding/json would put every caller's string on the heap
	err := json.Unmarshal(d.b[start:end], &u)
	*dst = u
	return err == nil
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// null reads a null, if one is next.
func (d *fastDec) null() bool {
	d.ws()
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// bool decodes true, false or null (no change) into *dst.
func (d *fastDec) bool(dst *bool) bool {
	if d.null() {
		return true
	}
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		*dst, d.i = true, d.i+4
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		*dst, d.i = false, d.i+5
	default:
		return false
	}
	return true
}

// number reads a JSON number and returns its text, or nil.
func (d *fastDec) number() []byte {
	b, start := d.b, d.i
	j := start
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
	default:
		return nil
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			return nil
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			return nil
		}
	}
	d.i = j
	return b[start:j]
}

// int64 decodes an integer or null (no change) as encoding/json does into
// an int64: a number with a fraction or exponent, or out of range, is an
// error.
func (d *fastDec) int64(dst *int64) bool {
	if d.null() {
		return true
	}
	n := d.number()
	if n == nil {
		return false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	*dst = v
	return err == nil
}

func (d *fastDec) int(dst *int) bool {
	v := int64(*dst)
	if !d.int64(&v) || int64(int(v)) != v {
		return false
	}
	*dst = int(v)
	return true
}

// float decodes a number or null (no change) as encoding/json does into a
// float64.
func (d *fastDec) float(dst *float64) bool {
	if d.null() {
		return true
	}
	n := d.number()
	if n == nil {
		return false
	}
	v, err := strconv.ParseFloat(string(n), 64)
	*dst = v
	return err == nil
}

// strings decodes null (nil) or an array of strings and nulls ("") into
// *dst; dst nil only checks it. keep false only checks it.
func (d *fastDec) strings(dst *[]string, keep bool) bool {
	if d.null() {
		return true
	}
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return false
	}
	d.i++
	out := []string{}
	if d.ws() < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		for {
			var s string
			var ps *string
			if keep {
				ps = &s
			}
			if !d.str(ps) {
				return false
			}
			if keep {
				out = append(out, s)
			}
			if d.ws() >= len(d.b) {
				return false
			}
			if d.b[d.i] == ']' {
				d.i++
				break
			}
			if d.b[d.i] != ',' {
				return false
			}
			d.i++
			d.ws()
		}
	}
	if keep && dst != nil {
		*dst = out
	}
	return true
}

// keyString is the map key of an object key (between its quotes) as
// encoding/json unquotes it.
func keyString(key []byte, plain bool) (string, bool) {
	if plain {
		return string(key), true
	}
	var s string
	// key is a slice of a larger buffer: its quotes are just outside it.
	quoted := key[: len(key)+1 : len(key)+1]
	quoted = append([]byte{'"'}, quoted...)
	return s, json.Unmarshal(quoted, &s) == nil
}

// stringMap decodes null or an object of strings (null values are "")
// into *dst when keep, else only checks it.
func (d *fastDec) stringMap(dst *map[string]string, keep bool) bool {
	if d.null() {
		return true
	}
	var m map[string]string
	if keep {
		m = map[string]string{}
	}
	ok := d.object(func(key []byte, plain bool) bool {
		if !keep {
			return d.str(nil)
		}
		k, ok := keyString(key, plain)
		var s string
		if !ok || !d.str(&s) {
			return false
		}
		m[k] = s
		return true
	})
	if ok && keep {
		*dst = m
	}
	return ok
}

// metrics decodes null or an object into *dst as Metrics.UnmarshalJSON
// does (the last of a name given twice decides; values metricValue keeps).
func (d *fastDec) metrics(dst *Metrics) bool {
	if d.null() {
		*dst = nil
		return true
	}
	type pair struct {
		key string
		raw []byte
	}
	var buf [32]pair
	pairs := buf[:0]
	ok := d.object(func(key []byte, plain bool) bool {
		k, ok := keyString(key, plain)
		start := d.ws()
		if !ok || !d.skip() {
			return false
		}
		pairs = append(pairs, pair{k, d.b[start:d.i]})
		return true
	})
	if !ok || len(pairs) > len(buf) {
		return false // many metrics: the few ledgers that have them go through encoding/json
	}
	out := make(Metrics, len(pairs))
outer:
	for i, p := range pairs {
		for _, later := range pairs[i+1:] {
			if later.key == p.key {
				continue outer
			}
		}
		if v, keep := metricValue(p.raw); keep {
			out[p.key] = v
		}
	}
	*dst = out
	return true
}

// skip checks and passes over any JSON value.
func (d *fastDec) skip() bool {
	if d.ws() >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; c {
	case '"':
		end, _ := d.scanString()
		return end >= 0
	case '{', '[':
		if d.depth++; d.depth > maxFastDepth {
			return false
		}
		defer func() { d.depth-- }()
		if c == '{' {
			return d.object(func([]byte, bool) bool { return d.skip() })
		}
		d.i++
		if d.ws() < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return true
		}
		for {
			if !d.skip() {
				return false
			}
			if d.ws() >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case ']':
				d.i++
				return true
			default:
				return false
			}
		}
	case 't':
		var v bool
		return d.bool(&v)
	case 'f':
		var v bool
		return d.bool(&v)
	case 'n':
		return d.null()
	}
	return d.number() != nil
}
