package arcmemo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Memory formats recognised by ParseMemory.
const (
	FormatConceptMemory = "concept_memory" // arc_memo v4 / mem2 concept memory (§4.1)
	FormatConceptPS     = "concept_ps"     // mem2 MemoryState holding a concept memory
	FormatArcMemoPS     = "arcmemo_ps"     // mem2 MemoryState holding lesson entries
	FormatLessonMap     = "lesson_map"     // parsed_lessons.json: uid → [{situation, suggestion}]
	FormatLessonList    = "lesson_list"    // continual driver concept_memory.json: [{situation, suggestion, source}]
)

// Concept is one concept of a concept memory, decoded tolerantly: list
// fields may be null (counted as empty), items may be objects.
type Concept struct {
	Name           string
	Kind           string
	RoutineSubtype *string
	Cues           int
	Implementation int
	ImplNull       bool
	ObjectItems    int
	Parameters     int
	UsedIn         []string
	Raw            []byte // compact JSON, to diff snapshots
	r              renderConcept
}

// NeedsCompression is the §4.6 rule: used in more than one puzzle and more
// than one cue or implementation note.
func (c *Concept) NeedsCompression() bool {
	return len(c.UsedIn) > 1 && (c.Cues > 1 || c.Implementation > 1)
}

// Lesson is one lesson entry, kept as compact JSON for diffs.
type Lesson struct {
	Puzzle string
	Raw    []byte
}

// Memory is a decoded memory file of any recognised format.
type Memory struct {
	Format      string
	SchemaName  string
	Concepts    []Concept // file order
	Solutions   int
	CustomTypes int
	// CustomTypeDefs maps custom type names to annotations, for rendering.
	CustomTypeDefs map[string]string
	Lessons        []Lesson
	Warnings       []string
}

type conceptJSON struct {
	Name           *string         `json:"name"`
	Description    json.RawMessage `json:"description"`
	OutputTyping   json.RawMessage `json:"output_typing"`
	Kind           string          `json:"kind"`
	RoutineSubtype *string         `json:"routine_subtype"`
	Parameters     json.RawMessage `json:"parameters"`
	Cues           json.RawMessage `json:"cues"`
	Implementation json.RawMessage `json:"implementation"`
	UsedIn         json.RawMessage `json:"used_in"`
}

// listLen counts the items of a list field: null or absent is 0, a scalar
// is one item. objects reports how many items are JSON objects.
func listLen(raw json.RawMessage) (n, objects int, isNull bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, 0, true, nil
	}
	if raw[0] != '[' {
		return 1, 0, false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return 0, 0, false, err
	}
	for _, it := range items {
		if t := bytes.TrimSpace(it); len(t) > 0 && t[0] == '{' {
			objects++
		}
	}
	return len(items), objects, false, nil
}

func stringList(raw json.RawMessage) []string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) != nil {
			s = string(bytes.TrimSpace(it))
		}
		out = append(out, s)
	}
	return out
}

// ParseMemory decodes a memory file: a concept memory, a mem2 MemoryState
// (concept_ps or arcmemo_ps), or a lesson file. Anything else is rejected
// with an error naming what was expected.
func ParseMemory(b []byte, name string) (*Memory, error) {
	trim := bytes.TrimSpace(b)
	if len(trim) > 0 && trim[0] == '[' {
		return parseLessonList(trim, name)
	}
	top, err := orderedObject(trim)
	if err != nil {
		return nil, notMemory(name, "not a JSON object ("+shortErr(err)+")")
	}
	get := func(k string) (json.RawMessage, bool) {
		for _, kv := range top {
			if kv.Key == k {
				return kv.Value, true
			}
		}
		return nil, false
	}
	if sn, ok := get("schema_name"); ok {
		payload, ok := get("payload")
		if !ok {
			return nil, notMemory(name, "a MemoryState without payload")
		}
		var schema string
		_ = json.Unmarshal(sn, &schema)
		switch schema {
		case FormatConceptPS:
			m, err := parseConceptMemory(payload, name)
			if err != nil {
				return nil, err
			}
			m.Format, m.SchemaName = FormatConceptPS, schema
			return m, nil
		case FormatArcMemoPS:
			var p struct {
				Entries []json.RawMessage `json:"entries"`
			}
			if err := json.Unmarshal(payload, &p); err != nil {
				return nil, notMemory(name, "arcmemo_ps payload without an entries list ("+shortErr(err)+")")
			}
			m := &Memory{Format: FormatArcMemoPS, SchemaName: schema}
			for _, e := range p.Entries {
				var x struct {
					ProblemUID string `json:"problem_uid"`
				}
				_ = json.Unmarshal(e, &x)
				m.Lessons = append(m.Lessons, Lesson{Puzzle: x.ProblemUID, Raw: compact(e)})
			}
			return m, nil
		default:
			return nil, notMemory(name, fmt.Sprintf("a MemoryState with schema_name %q (known: concept_ps, arcmemo_ps)", schema))
		}
	}
	if c, ok := get("concepts"); ok {
		m, err := parseConceptMemory(trim, name)
		if err != nil {
			return nil, err
		}
		_ = c
		m.Format = FormatConceptMemory
		return m, nil
	}
	// parsed_lessons.json: every value a list of {situation, suggestion}.
	if len(top) > 0 {
		m := &Memory{Format: FormatLessonMap}
		for _, kv := range top {
			var ls []map[string]json.RawMessage
			if json.Unmarshal(kv.Value, &ls) != nil {
				return nil, notMemory(name, fmt.Sprintf("key %q is neither concepts, schema_name nor a lesson list", kv.Key))
			}
			for _, l := range ls {
				if _, ok := l["situation"]; !ok {
					return nil, notMemory(name, fmt.Sprintf("key %q holds a list whose items have no situation", kv.Key))
				}
				raw, _ := json.Marshal(l)
				m.Lessons = append(m.Lessons, Lesson{Puzzle: kv.Key, Raw: raw})
			}
		}
		return m, nil
	}
	return nil, notMemory(name, "an empty object")
}

func notMemory(name, what string) error {
	return badInput("%s is not a concept memory: found %s; expected an object with \"concepts\" (concept memory), a mem2 MemoryState (schema_name concept_ps or arcmemo_ps), or a lesson file", name, what)
}

func parseLessonList(b []byte, name string) (*Memory, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, notMemory(name, "a JSON array that is not a list of lessons")
	}
	m := &Memory{Format: FormatLessonList}
	for i, it := range items {
		if _, ok := it["situation"]; !ok {
			return nil, notMemory(name, fmt.Sprintf("a JSON array whose item %d has no situation", i))
		}
		var src string
		_ = json.Unmarshal(it["source"], &src)
		raw, _ := json.Marshal(it)
		m.Lessons = append(m.Lessons, Lesson{Puzzle: src, Raw: raw})
	}
	return m, nil
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return append([]byte(nil), b...)
	}
	return buf.Bytes()
}

func parseConceptMemory(b []byte, name string) (*Memory, error) {
	top, err := orderedObject(b)
	if err != nil {
		return nil, notMemory(name, "a payload that is not a JSON object")
	}
	m := &Memory{}
	var concepts json.RawMessage
	for _, kv := range top {
		switch kv.Key {
		case "concepts":
			concepts = kv.Value
		case "solutions", "custom_types":
			var obj map[string]json.RawMessage
			if t := bytes.TrimSpace(kv.Value); !bytes.Equal(t, []byte("null")) {
				if err := json.Unmarshal(kv.Value, &obj); err != nil {
					return nil, badInput("%s: %q must be an object: %v", name, kv.Key, shortErr(err))
				}
			}
			if kv.Key == "solutions" {
				m.Solutions = len(obj)
			} else {
				m.CustomTypes = len(obj)
				m.CustomTypeDefs = map[string]string{}
				for k, v := range obj {
					m.CustomTypeDefs[k] = pyStr(v)
				}
			}
		}
	}
	if concepts == nil {
		return nil, notMemory(name, "an object without \"concepts\"")
	}
	members, err := orderedObject(concepts)
	if err != nil {
		return nil, badInput("%s: \"concepts\" must be an object of name → concept: %v", name, shortErr(err))
	}
	seen := map[string]bool{}
	for _, kv := range members {
		var cj conceptJSON
		if err := json.Unmarshal(kv.Value, &cj); err != nil {
			return nil, badInput("%s: concept %q is not a concept object: %v", name, kv.Key, shortErr(err))
		}
		c := Concept{Name: kv.Key, Kind: cj.Kind, RoutineSubtype: cj.RoutineSubtype, Raw: compact(kv.Value)}
		if cj.Name != nil && *cj.Name != kv.Key {
			m.Warnings = append(m.Warnings, fmt.Sprintf("concept key %q differs from its name %q; using the key", kv.Key, *cj.Name))
		}
		if seen[kv.Key] {
			m.Warnings = append(m.Warnings, fmt.Sprintf("concept %q appears twice; the later one wins in Python", kv.Key))
		}
		seen[kv.Key] = true
		var objs int
		var e1, e2, e3, e4 error
		c.Cues, objs, _, e1 = listLen(cj.Cues)
		c.ObjectItems += objs
		c.Implementation, objs, c.ImplNull, e2 = listLen(cj.Implementation)
		c.ObjectItems += objs
		c.Parameters, _, _, e3 = listLen(cj.Parameters)
		_, _, _, e4 = listLen(cj.UsedIn)
		for _, e := range []error{e1, e2, e3, e4} {
			if e != nil {
				return nil, badInput("%s: concept %q has a malformed list: %v", name, kv.Key, shortErr(e))
			}
		}
		c.UsedIn = stringList(cj.UsedIn)
		c.r = renderConcept{description: truthyStr(cj.Description), outputTyping: truthyStr(cj.OutputTyping),
			cues: itemStrings(cj.Cues), impl: itemStrings(cj.Implementation)}
		var params []json.RawMessage
		if json.Unmarshal(cj.Parameters, &params) == nil {
			for _, p := range params {
				var pj struct {
					Name   json.RawMessage `json:"name"`
					Typing json.RawMessage `json:"typing"`
				}
				if json.Unmarshal(p, &pj) != nil {
					c.r.params = append(c.r.params, renderParam{name: pyStr(p)})
					continue
				}
				c.r.params = append(c.r.params, renderParam{name: pyStr(pj.Name), typing: truthyStr(pj.Typing)})
			}
		}
		m.Concepts = append(m.Concepts, c)
	}
	return m, nil
}

// SubtypeCount is the number of concepts of one kind and routine subtype.
type SubtypeCount struct {
	Kind    string `json:"kind"`
	Subtype string `json:"routine_subtype"` // "null" when absent
	Count   int    `json:"count"`
}

// MemoryStats are the figures of one memory file (ARCMEMO_FORMATS.md §5).
type MemoryStats struct {
	Format               string         `json:"format"`
	Concepts             int            `json:"concepts"`
	Kinds                map[string]int `json:"kinds"`
	Subtypes             []SubtypeCount `json:"subtypes"`
	CuesTotal            int            `json:"cues_total"`
	CuesMean             float64        `json:"cues_mean"`
	ImplementationTotal  int            `json:"implementation_total"`
	ImplementationMean   float64        `json:"implementation_mean"`
	ImplementationNull   int            `json:"implementation_null"`
	CuesEmpty            int            `json:"cues_empty"`
	ObjectItems          int            `json:"object_items"`
	Parameters           int            `json:"parameters"`
	UsedInTotal          int            `json:"used_in_total"`
	UsedInMax            int            `json:"used_in_max"`
	UsedInDistinct       int            `json:"used_in_distinct"`
	UsedInMulti          int            `json:"used_in_multi"`
	NeedsCompression     int            `json:"needs_compression"`
	NeedsCompressionMem2 int            `json:"needs_compression_mem2_script"`
	Solutions            int            `json:"solutions"`
	CustomTypes          int            `json:"custom_types"`
	RenderedChars        int            `json:"rendered_chars"`
	Lessons              int            `json:"lessons"`
	LessonPuzzles        int            `json:"lesson_puzzles"`
	FirstConcepts        []string       `json:"first_concepts"`
}

// Stats computes the figures of m. Means divide by all concepts, with null
// lists counted as empty.
func (m *Memory) Stats() MemoryStats {
	s := MemoryStats{Format: m.Format, Concepts: len(m.Concepts), Kinds: map[string]int{},
		Solutions: m.Solutions, CustomTypes: m.CustomTypes, Lessons: len(m.Lessons), Subtypes: []SubtypeCount{}, FirstConcepts: []string{}}
	sub := map[[2]string]int{}
	used := map[string]bool{}
	for i := range m.Concepts {
		c := &m.Concepts[i]
		s.Kinds[c.Kind]++
		st := "null"
		if c.RoutineSubtype != nil {
			st = *c.RoutineSubtype
		}
		sub[[2]string{c.Kind, st}]++
		s.CuesTotal += c.Cues
		s.ImplementationTotal += c.Implementation
		if c.ImplNull {
			s.ImplementationNull++
		}
		if c.Cues == 0 {
			s.CuesEmpty++
		}
		s.ObjectItems += c.ObjectItems
		s.Parameters += c.Parameters
		s.UsedInTotal += len(c.UsedIn)
		if len(c.UsedIn) > s.UsedInMax {
			s.UsedInMax = len(c.UsedIn)
		}
		if len(c.UsedIn) > 1 {
			s.UsedInMulti++
		}
		for _, u := range c.UsedIn {
			used[u] = true
		}
		if c.NeedsCompression() {
			s.NeedsCompression++
		}
		if c.Cues >= 2 || c.Implementation >= 2 {
			s.NeedsCompressionMem2++
		}
		if i < 5 {
			s.FirstConcepts = append(s.FirstConcepts, c.Name)
		}
	}
	s.UsedInDistinct = len(used)
	if len(m.Concepts) > 0 {
		s.RenderedChars = m.RenderedChars()
	}
	if n := len(m.Concepts); n > 0 {
		s.CuesMean = float64(s.CuesTotal) / float64(n)
		s.ImplementationMean = float64(s.ImplementationTotal) / float64(n)
	}
	for k, v := range sub {
		s.Subtypes = append(s.Subtypes, SubtypeCount{Kind: k[0], Subtype: k[1], Count: v})
	}
	sort.Slice(s.Subtypes, func(i, j int) bool {
		a, b := s.Subtypes[i], s.Subtypes[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Subtype < b.Subtype
	})
	puz := map[string]bool{}
	for _, l := range m.Lessons {
		puz[l.Puzzle] = true
	}
	s.LessonPuzzles = len(puz)
	return s
}

// Diff is what changed between two snapshots (§4.4): concepts by name,
// lessons as a multiset of entries.
type Diff struct {
	Added     int `json:"added"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Removed   int `json:"removed"`
}

// DiffMemory compares prev (nil: empty) with cur.
func DiffMemory(prev, cur *Memory) Diff {
	var d Diff
	if len(cur.Concepts) > 0 || (prev != nil && len(prev.Concepts) > 0) {
		old := map[string][]byte{}
		if prev != nil {
			for _, c := range prev.Concepts {
				old[c.Name] = c.Raw
			}
		}
		now := map[string]bool{}
		for _, c := range cur.Concepts {
			now[c.Name] = true
			o, ok := old[c.Name]
			switch {
			case !ok:
				d.Added++
			case bytes.Equal(o, c.Raw):
				d.Unchanged++
			default:
				d.Updated++
			}
		}
		for n := range old {
			if !now[n] {
				d.Removed++
			}
		}
		return d
	}
	count := map[string]int{}
	if prev != nil {
		for _, l := range prev.Lessons {
			count[string(l.Raw)]++
		}
	}
	for _, l := range cur.Lessons {
		if count[string(l.Raw)] > 0 {
			count[string(l.Raw)]--
			d.Unchanged++
		} else {
			d.Added++
		}
	}
	for _, n := range count {
		d.Removed += n
	}
	return d
}
