// Package display makes untrusted text safe to show. Records come from
// agents, commit messages and other machines' ledgers, so any field may hold
// terminal escape sequences (ESC, OSC 52 clipboard writes, BEL), NUL, a
// carriage return that overwrites what was printed before it, or Unicode
// bidirectional controls (U+202E) that make text read differently from what
// it is. Every terminal, TSV and markdown output of memorylab passes record
// text through this package, and nothing else decides what is safe.
//
// It is a leaf package (no memorylab imports) because both packets and
// report render markdown and report imports packets.
package display

import "strings"

// Unsafe reports whether r must never reach a terminal or a markdown file
// raw: C0 controls other than tab and newline, DEL, C1 controls, and the
// Unicode controls that reorder or hide text (bidi embeddings, overrides,
// isolates and marks, the Arabic letter mark, the BOM). Invalid UTF-8 has
// already become U+FFFD when a string is ranged over, so it is never raw.
func Unsafe(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e,
		r >= 0x2066 && r <= 0x2069, r == 0xfeff:
		return true
	}
	return false
}

// Text drops every unsafe character and keeps tabs and newlines, for
// multi-line output (a diff, an indented packet). A carriage return is
// dropped too: it would let a line overwrite what came before it.
func Text(s string) string {
	if clean(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if Unsafe(r) {
			return -1
		}
		return r
	}, s)
}

// Line is Text for one line of output: newlines, carriage returns and tabs
// become spaces (so record text cannot forge a line of our own output or a
// TSV column) and every other unsafe character is dropped.
func Line(s string) string {
	if clean(s) && !strings.ContainsAny(s, "\t\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case Unsafe(r):
			return -1
		}
		return r
	}, s)
}

// Fields is Line with runs of white space folded into one space and the
// ends trimmed, for table cells and one-line summaries.
func Fields(s string) string {
	return strings.Join(strings.Fields(Line(s)), " ")
}

// clean reports whether s is plain ASCII text without controls other than
// tab and newline, the common case, so it is returned without copying.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n') {
			return false
		}
	}
	return true
}
