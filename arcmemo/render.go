package arcmemo

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// renderConcept is what the prompt rendering (ARCMEMO_FORMATS.md §4.5)
// needs of a concept.
type renderConcept struct {
	description  string // Python str() of the field; "" when null or empty
	outputTyping string
	params       []renderParam
	cues         []string // items as Python prints them
	impl         []string
}

type renderParam struct{ name, typing string }

// pyStr is Python's str() of a JSON value: strings as they are, everything
// else as its repr.
func pyStr(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return pyRepr(raw)
}

// pyRepr is Python's repr() of a decoded JSON value, enough for the
// one-key objects that occur as list items: {'key': 'value'}.
func pyRepr(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "None"
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return pyQuote(s)
	case 'n':
		return "None"
	case 't':
		return "True"
	case 'f':
		return "False"
	case '[':
		var items []json.RawMessage
		_ = json.Unmarshal(raw, &items)
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = pyRepr(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case '{':
		kvs, err := orderedObject(raw)
		if err != nil {
			return string(raw)
		}
		parts := make([]string, len(kvs))
		for i, kv := range kvs {
			parts[i] = pyQuote(kv.Key) + ": " + pyRepr(kv.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	// Numbers: Python prints JSON integers as ints and others as floats.
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0"
		}
		return s
	}
	return string(raw)
}

// pyQuote is Python's repr of a str: single quotes unless the text holds a
// single quote and no double quote.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + strconv.FormatInt(int64(r)+0x100, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

func itemStrings(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		if len(raw) > 0 && raw[0] == '"' {
			return []string{pyStr(raw)}
		}
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = pyStr(it)
	}
	return out
}

func truthyStr(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte(`""`)) || bytes.Equal(raw, []byte("false")) || bytes.Equal(raw, []byte("0")) {
		return ""
	}
	return pyStr(raw)
}

// RenderOptions select the memory render; the zero value plus
// UsageThreshold 2 is mem2's default prompt render.
type RenderOptions struct {
	UsageThreshold int
}

// Render renders the concept memory as mem2/arc_memo put it into prompts
// (ARCMEMO_FORMATS.md §4.5, default options: descriptions shown, kind and
// routine_subtype hidden, parameters without descriptions, no cues in the
// "other routines" section). Concepts of other kinds are not rendered.
func (m *Memory) Render(opts RenderOptions) string {
	var blocks []string
	section := func(header string, cs []*Concept, showCues bool) string {
		lines := []string{header}
		var low []string
		for _, c := range cs {
			if len(c.UsedIn) < opts.UsageThreshold {
				low = append(low, c.Name)
				continue
			}
			lines = append(lines, c.render(showCues))
		}
		if len(low) > 0 {
			sort.Strings(low)
			lines = append(lines, "- lower usage concepts: ["+strings.Join(low, ", ")+"]")
		}
		return strings.Join(lines, "\n")
	}
	var structures, grid, other []*Concept
	for i := range m.Concepts {
		c := &m.Concepts[i]
		switch {
		case c.Kind == "structure":
			structures = append(structures, c)
		case c.Kind == "routine" && c.RoutineSubtype != nil && *c.RoutineSubtype == "grid manipulation":
			grid = append(grid, c)
		case c.Kind == "routine":
			other = append(other, c)
		}
	}
	if len(structures) > 0 {
		blocks = append(blocks, section("## structure concepts", structures, true))
	}
	if len(m.CustomTypeDefs) > 0 {
		names := make([]string, 0, len(m.CustomTypeDefs))
		for n := range m.CustomTypeDefs {
			names = append(names, n)
		}
		sort.Strings(names)
		lines := []string{"## types"}
		for _, n := range names {
			lines = append(lines, "- "+n+" := "+m.CustomTypeDefs[n])
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	if len(grid) > 0 {
		blocks = append(blocks, section("## grid manipulation routines", grid, true))
	}
	if len(other) > 0 {
		buckets := map[string][]*Concept{}
		for _, c := range other {
			key := "misc"
			if c.RoutineSubtype != nil && *c.RoutineSubtype != "" {
				key = *c.RoutineSubtype
			}
			buckets[key] = append(buckets[key], c)
		}
		keys := make([]string, 0, len(buckets))
		for k := range buckets {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		lines := []string{"## other routines"}
		var low []string
		for _, k := range keys {
			lines = append(lines, "### "+k)
			for _, c := range buckets[k] {
				if len(c.UsedIn) < opts.UsageThreshold {
					low = append(low, c.Name)
					continue
				}
				lines = append(lines, c.render(false))
			}
		}
		if len(low) > 0 {
			sort.Strings(low)
			lines = append(lines, "- lower usage concepts: ["+strings.Join(low, ", ")+"]")
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	return strings.TrimRight(strings.Join(blocks, "\n\n"), " \t\n\r\v\f")
}

func (c *Concept) render(showCues bool) string {
	r := c.r
	lines := []string{"- concept: " + c.Name}
	if r.description != "" {
		lines = append(lines, "  description: "+r.description)
	}
	if r.outputTyping != "" {
		lines = append(lines, "  output_typing: "+r.outputTyping)
	}
	if len(r.params) > 0 {
		lines = append(lines, "  parameters:")
		for _, p := range r.params {
			line := "    - " + p.name
			if p.typing != "" {
				line += " (type: " + p.typing + ")"
			}
			lines = append(lines, line)
		}
	}
	if showCues && len(r.cues) > 0 {
		lines = append(lines, "  cues:")
		for _, s := range r.cues {
			lines = append(lines, "    - "+s)
		}
	}
	if len(r.impl) > 0 {
		lines = append(lines, "  implementation:")
		for _, s := range r.impl {
			lines = append(lines, "    - "+s)
		}
	}
	return strings.Join(lines, "\n")
}

// RenderedChars is the length of the default render in characters (code
// points, as Python's len counts).
func (m *Memory) RenderedChars() int {
	return utf8.RuneCountInString(m.Render(RenderOptions{UsageThreshold: 2}))
}
