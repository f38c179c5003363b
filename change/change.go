// Package change fingerprints the code change a run made: a normalised
// diff of the changed files (whitespace and comments do not count), a hash
// of that diff, a hash of the code that ran, and the parameter edits in it
// (NAME = 0.04 → NAME = 0.06). It is pure: the caller (ops, through ledger)
// reads the files from git or the working tree.
package change

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// File is one file a change touched, before and after (nil: absent).
type File struct {
	Path     string
	Old, New []byte
}

// Edit is one parameter whose value a change changed.
type Edit struct {
	File string `json:"file"`
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// Code is the fingerprint of one run's change.
type Code struct {
	// Change hashes the normalised diff; "" when nothing but whitespace or
	// comments changed (a re-run of the parent's code).
	Change string `json:"change,omitempty"`
	// Result hashes the code that ran: the normalised training file and
	// every changed file as they are after the change.
	Result string `json:"result,omitempty"`
	Edits  []Edit `json:"edits,omitempty"`
	// Values are the parameters of the code that ran, whether or not the
	// change set them: every assignment Params reads in the training file
	// and in the files the change touched (after it), sorted by file and
	// name. Sweep memory reads inherited values from them (issue 25).
	Values []Value `json:"values,omitempty"`
}

// Value is one parameter's value in the code that ran.
type Value struct {
	File  string `json:"file"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

// hashLen is how many hex digits of SHA-256 a fingerprint keeps: 64 bits,
// collision-free for any ledger a lab will write.
const hashLen = 16

// MaxFile is the largest file read into a fingerprint; bigger ones (data,
// checkpoints committed by mistake) count by their git hash alone.
const MaxFile = 1 << 20

// Fingerprint computes the fingerprint of files (the files the change
// touched, any order) with train the training file's content after the
// change (trainPath names it; nil when there is none).
func Fingerprint(files []File, trainPath string, train []byte) Code {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	ch, res := sha256.New(), sha256.New()
	changed := false
	var c Code
	if train != nil {
		res.Write([]byte("train\x00" + strings.Join(Normalize(trainPath, train), "\n") + "\x00"))
	}
	for _, f := range sorted {
		if binary(f.Old) || binary(f.New) || Lines(string(f.Old))+Lines(string(f.New)) > MaxDiffLines {
			// Compared by content only: a changed binary file (or one
			// too long to line-diff, see MaxDiffLines) changes both
			// hashes, whitespace and all.
			ch.Write([]byte("bin\x00" + f.Path + "\x00"))
			ch.Write(f.Old)
			ch.Write([]byte{0})
			ch.Write(f.New)
			res.Write(f.New)
			changed = true
			continue
		}
		oldLines, newLines := Normalize(f.Path, f.Old), Normalize(f.Path, f.New)
		if f.Path != trainPath {
			res.Write([]byte("file\x00" + f.Path + "\x00" + strings.Join(newLines, "\n") + "\x00"))
		}
		var d strings.Builder
		for _, op := range lineDiff(joinLines(oldLines), joinLines(newLines)) {
			if op.Type == diffmatchpatch.DiffEqual {
				continue
			}
			sign := "+"
			if op.Type == diffmatchpatch.DiffDelete {
				sign = "-"
			}
			for _, l := range strings.SplitAfter(op.Text, "\n") {
				if l != "" {
					d.WriteString(sign + l)
				}
			}
		}
		if f.Old == nil || f.New == nil {
			d.WriteString("exists\x00" + boolText(f.New != nil))
		}
		if d.Len() == 0 {
			continue
		}
		changed = true
		ch.Write([]byte("file\x00" + f.Path + "\x00" + d.String() + "\x00"))
		c.Edits = append(c.Edits, Edits(f.Path, f.Old, f.New)...)
	}
	if changed {
		c.Change = hex.EncodeToString(ch.Sum(nil))[:hashLen]
	}
	c.Values = values(sorted, trainPath, train)
	if train != nil || len(sorted) > 0 {
		c.Result = hex.EncodeToString(res.Sum(nil))[:hashLen]
	}
	return c
}

// values reads the parameters of the code that ran: the training file's
// and each present touched file's, after the change.
func values(files []File, trainPath string, train []byte) []Value {
	var out []Value
	add := func(p string, content []byte) {
		ps := Params(p, content)
		names := make([]string, 0, len(ps))
		for n := range ps {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, Value{File: p, Name: n, Value: ps[n]})
		}
	}
	if train != nil {
		add(trainPath, train)
	}
	for _, f := range files {
		if f.Path != trainPath && f.New != nil {
			add(f.Path, f.New)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func binary(b []byte) bool {
	if len(b) > MaxFile {
		return true
	}
	n := len(b)
	if n > 8000 {
		n = 8000 // git's heuristic: a NUL in the first 8000 bytes
	}
	for _, c := range b[:n] {
		if c == 0 {
			return true
		}
	}
	return false
}

// kind is how a file's comments and assignments are written.
type kind int

const (
	kindOther  kind = iota
	kindPython      // # comments, NAME = value, argparse defaults
	kindShell       // # comments, --flag value, NAME=value
	kindYAML        // # comments, key: value
	kindTOML        // # comments, [table] key = value
	kindC           // // comments (Go, C, C++, JS, TS, Rust, Java)
)

func kindOf(p string) kind {
	switch strings.ToLower(path.Ext(p)) {
	case ".py", ".pyi":
		return kindPython
	case ".sh", ".bash", ".zsh":
		return kindShell
	case ".yaml", ".yml":
		return kindYAML
	case ".toml", ".cfg", ".ini", ".conf":
		return kindTOML
	case ".go", ".c", ".h", ".cc", ".cpp", ".hpp", ".cu", ".js", ".ts", ".rs", ".java":
		return kindC
	}
	return kindOther
}

// Normalize returns the lines of content as the fingerprint sees them:
// comments removed (by the file's kind), all whitespace outside string
// literals removed, empty lines dropped. `x=1  # try` and `x = 1` are the
// same line.
func Normalize(p string, content []byte) []string {
	k := kindOf(p)
	var out []string
	for _, line := range strings.Split(string(content), "\n") {
		if l := normalizeLine(line, k); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// normalizeLine strips a comment and the whitespace outside quotes.
func normalizeLine(line string, k kind) string {
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if quote != 0 {
			b.WriteByte(c)
			switch {
			case c == '\\' && i+1 < len(line):
				i++
				b.WriteByte(line[i])
			case c == quote:
				quote = 0
			}
			continue
		}
		switch {
		case c == '"' || c == '\'' || (c == '`' && k == kindC):
			quote = c
			b.WriteByte(c)
		case c == '#' && k != kindC && k != kindOther:
			return b.String()
		case c == '/' && k == kindC && i+1 < len(line) && line[i+1] == '/':
			return b.String()
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// lineDiff is the line diff a change's fingerprint is made of:
// diffmatchpatch over whole lines, with a timeout long enough never to cut
// it short (a cut diff would give the same code another fingerprint). It
// is what go-git's utils/diff.Do computes, without pulling go-git into a
// package of pure logic.
func lineDiff(src, dst string) []diffmatchpatch.Diff {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = time.Hour
	a, b, lines := dmp.DiffLinesToRunes(src, dst)
	return dmp.DiffCharsToLines(dmp.DiffMainRunes(a, b, false), lines)
}
