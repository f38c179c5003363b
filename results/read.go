package results

import (
	"bytes"
	"strings"
)

// Line is one physical line of a results.tsv that holds fields: its 1-based
// line number and its tab-separated fields, already unquoted.
type Line struct {
	No     int
	Fields []string
}

// Table is a results.tsv split into lines and fields. It knows nothing about
// what the columns mean; Detect does that.
type Table struct {
	Lines    []Line // every non-blank, non-comment line in file order (the header too)
	Comments []Line // lines starting with '#': fields of the text after the '#'
	Blank    int    // blank lines seen
	// LiteralTabs: the header separated its columns with the two
	// characters `\t` instead of a tab, and every line was read so.
	LiteralTabs bool
}

// Parse splits data into lines and fields. It never fails: every byte
// sequence gives a Table. Line breaks are LF, CRLF or a lone CR (files that
// mix them are common); a UTF-8 byte order mark is dropped; lines whose first
// non-space character is '#' are comments. Fields are separated by tabs; a
// field written CSV-style ("…" with "" for a quote) is unquoted, any other
// quote character is kept as text. Quoted fields never span lines.
func Parse(data []byte) *Table {
	t := &Table{}
	t.LiteralTabs, _ = scanLines(bytes.NewReader(data), func(no, kind int, f []string) error {
		switch kind {
		case kindBlank:
			t.Blank++
		case kindComment:
			t.Comments = append(t.Comments, Line{No: no, Fields: f})
		default:
			t.Lines = append(t.Lines, Line{No: no, Fields: f})
		}
		return nil
	})
	return t
}

// SplitFields splits one line at tabs. A field that starts with a double
// quote and ends with one, with every inner quote doubled, is CSV-quoted and
// is unquoted (it may then contain tabs). Anything else is taken literally,
// so stray quotes in free text survive unchanged.
func SplitFields(line string) []string {
	var out []string
	for {
		if strings.HasPrefix(line, `"`) {
			if v, rest, ok := quotedField(line); ok {
				out = append(out, v)
				if rest == "" {
					return out
				}
				line = rest[1:] // skip the tab
				continue
			}
		}
		i := strings.IndexByte(line, '\t')
		if i < 0 {
			return append(out, line)
		}
		out = append(out, line[:i])
		line = line[i+1:]
	}
}

// quotedField reads a CSV-quoted field at the start of s. rest is what
// follows the closing quote: "" at the end of the line or a string starting
// with a tab. ok is false when s does not hold a well-formed quoted field.
func quotedField(s string) (v, rest string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '"' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '"' {
			b.WriteByte('"')
			i++
			continue
		}
		rest = s[i+1:]
		if rest == "" || rest[0] == '\t' {
			return b.String(), rest, true
		}
		return "", "", false
	}
	return "", "", false
}

// quoteField writes v CSV-quoted when reading it back literally would change
// it (it starts with a quote or holds a tab); otherwise v unchanged.
func quoteField(v string) string {
	if !strings.HasPrefix(v, `"`) && !strings.Contains(v, "\t") {
		return v
	}
	return `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
}
