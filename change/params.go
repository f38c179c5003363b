package change

import (
	"regexp"
	"sort"
	"strings"
)

// Edits lists the parameters whose value differs between old and new
// content of one file (both present), sorted by name. A name assigned
// twice in one version is ambiguous and left out.
func Edits(p string, old, new []byte) []Edit {
	if old == nil || new == nil || binary(old) || binary(new) {
		return nil
	}
	a, b := Params(p, old), Params(p, new)
	var out []Edit
	for name, nv := range b {
		if ov, ok := a[name]; ok && ov != nv {
			out = append(out, Edit{File: p, Name: name, Old: ov, New: nv})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Params reads the parameter assignments of one file by its kind:
//   - Python: top-level `NAME = value` and `NAME: type = value`; fields of a
//     top-level class (a dataclass config) as `Class.field`; argparse
//     `add_argument("--flag", …, default=value)` as `--flag`;
//   - YAML: `key: value` scalars, nested keys joined with dots;
//   - TOML/INI: `key = value` under `[table]` as `table.key`;
//   - shell: `--flag value`, `--flag=value` and `NAME=value`.
//
// Values are normalised like lines (whitespace outside quotes and trailing
// comments removed). Names assigned more than once are dropped.
func Params(p string, content []byte) map[string]string {
	if binary(content) {
		return nil
	}
	k := kindOf(p)
	lines := strings.Split(string(content), "\n")
	ps := params{}
	switch k {
	case kindPython:
		pythonParams(lines, ps)
		argparseParams(string(content), ps)
	case kindYAML:
		yamlParams(lines, ps)
	case kindTOML:
		tomlParams(lines, ps)
	case kindShell:
		shellParams(lines, ps)
	}
	out := map[string]string{}
	for name, v := range ps {
		if !v.ambiguous {
			out[name] = v.value
		}
	}
	return out
}

type param struct {
	value     string
	ambiguous bool
}

type params map[string]param

func (ps params) set(name, value string) {
	if name == "" || value == "" {
		return
	}
	if old, ok := ps[name]; ok {
		ps[name] = param{value: old.value, ambiguous: true}
		return
	}
	ps[name] = param{value: value}
}

var (
	pyAssign  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*[^=]+?)?\s*=\s*([^=].*)$`)
	pyClass   = regexp.MustCompile(`^class\s+([A-Za-z_][A-Za-z0-9_]*)`)
	shAssign  = regexp.MustCompile(`^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\S*)`)
	shFlag    = regexp.MustCompile(`^--[A-Za-z0-9][A-Za-z0-9_.-]*`)
	yamlKey   = regexp.MustCompile(`^([A-Za-z0-9_.-]+|"[^"]*"|'[^']*')\s*:(?:\s+(.*))?$`)
	tomlKey   = regexp.MustCompile(`^([A-Za-z0-9_.-]+|"[^"]*")\s*=\s*(.+)$`)
	tomlTable = regexp.MustCompile(`^\[\[?\s*([^\]]+?)\s*\]\]?`)
)

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " \t")) }

// value normalises an assignment's right-hand side; "" when it is not a
// whole value on this line (an open bracket or triple quote continues).
func value(raw string, k kind) string {
	v := normalizeLine(raw, k)
	if v == "" || strings.HasPrefix(v, `"""`) || strings.HasPrefix(v, "'''") {
		return ""
	}
	depth := 0
	for _, c := range v {
		switch c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
	}
	if depth != 0 || strings.HasSuffix(v, "\\") {
		return ""
	}
	return v
}

func pythonParams(lines []string, ps params) {
	class, classIndent := "", -1
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		ind := indentOf(line)
		if ind == 0 {
			class, classIndent = "", -1
			if m := pyClass.FindStringSubmatch(line); m != nil {
				class = m[1]
				continue
			}
			if m := pyAssign.FindStringSubmatch(line); m != nil {
				ps.set(m[1], value(m[2], kindPython))
			}
			continue
		}
		if class == "" {
			continue // inside a function: code, not a parameter
		}
		if classIndent < 0 {
			classIndent = ind
		}
		if ind != classIndent {
			continue
		}
		if strings.HasPrefix(trimmed, "def ") || strings.HasPrefix(trimmed, "async def ") {
			class = "" // methods end the fields worth reading
			continue
		}
		if m := pyAssign.FindStringSubmatch(trimmed); m != nil {
			ps.set(class+"."+m[1], value(m[2], kindPython))
		}
	}
}

// argparseParams reads add_argument calls, which may span lines.
func argparseParams(src string, ps params) {
	for {
		i := strings.Index(src, "add_argument(")
		if i < 0 {
			return
		}
		src = src[i+len("add_argument("):]
		args, rest, ok := balanced(src)
		src = rest
		if !ok {
			return
		}
		var flag, def string
		for _, a := range splitArgs(args) {
			a = strings.TrimSpace(a)
			switch {
			case flag == "" && len(a) > 2 && (a[0] == '"' || a[0] == '\''):
				if s := strings.Trim(a, `"'`); strings.HasPrefix(s, "-") {
					flag = s
				}
			case strings.HasPrefix(a, "default"):
				if _, v, ok := strings.Cut(a, "="); ok {
					def = normalizeLine(v, kindPython)
				}
			}
		}
		if flag != "" && def != "" {
			ps.set(flag, def)
		}
	}
}

// walkCode calls fn for every byte of s outside string literals and #
// comments, with the bracket depth after that byte (starting from depth);
// fn returns false to stop.
func walkCode(s string, depth int, fn func(i int, c byte, depth int) bool) {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
			continue
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		if !fn(i, c, depth) {
			return
		}
	}
}

// balanced returns the text up to the bracket closing an already open one.
func balanced(s string) (inside, rest string, ok bool) {
	walkCode(s, 1, func(i int, _ byte, depth int) bool {
		if depth == 0 {
			inside, rest, ok = s[:i], s[i+1:], true
			return false
		}
		return true
	})
	return inside, rest, ok
}

// splitArgs splits a call's arguments at top-level commas.
func splitArgs(s string) []string {
	var out []string
	start := 0
	walkCode(s, 0, func(i int, c byte, depth int) bool {
		if c == ',' && depth == 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
		return true
	})
	return append(out, s[start:])
}

func yamlParams(lines []string, ps params) {
	type level struct {
		indent int
		key    string
	}
	var stack []level
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || trimmed == "---" || strings.HasPrefix(trimmed, "- ") || trimmed == "-" {
			continue
		}
		ind := indentOf(line)
		for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		m := yamlKey.FindStringSubmatch(trimmed)
		if m == nil {
			continue
		}
		key := strings.Trim(m[1], `"'`)
		v := ""
		if m[2] != "" {
			v = value(m[2], kindYAML)
		}
		if v == "" || v == "|" || v == ">" {
			stack = append(stack, level{ind, key})
			continue
		}
		name := key
		if len(stack) > 0 {
			parts := make([]string, 0, len(stack)+1)
			for _, l := range stack {
				parts = append(parts, l.key)
			}
			name = strings.Join(append(parts, key), ".")
		}
		ps.set(name, v)
	}
}

func tomlParams(lines []string, ps params) {
	table := ""
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
			continue
		}
		if m := tomlTable.FindStringSubmatch(trimmed); m != nil {
			table = m[1]
			continue
		}
		if m := tomlKey.FindStringSubmatch(trimmed); m != nil {
			name := strings.Trim(m[1], `"`)
			if table != "" {
				name = table + "." + name
			}
			ps.set(name, value(m[2], kindTOML))
		}
	}
}

func shellParams(lines []string, ps params) {
	// Continuation lines are one command.
	joined := strings.ReplaceAll(strings.Join(lines, "\n"), "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if m := shAssign.FindStringSubmatch(trimmed); m != nil && !strings.Contains(trimmed, " ") {
			ps.set(m[1], value(m[2], kindShell))
			continue
		}
		fields := strings.Fields(normalizeComment(trimmed))
		for i, f := range fields {
			if !shFlag.MatchString(f) {
				continue
			}
			if name, v, ok := strings.Cut(f, "="); ok {
				ps.set(name, v)
				continue
			}
			if i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "-") && !isShellOp(fields[i+1]) {
				ps.set(f, fields[i+1])
			}
		}
	}
}

// normalizeComment drops a shell comment but keeps the spacing.
func normalizeComment(line string) string {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

func isShellOp(s string) bool {
	switch s {
	case "|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1":
		return true
	}
	return false
}
