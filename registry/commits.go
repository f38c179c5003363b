package registry

import (
	"sort"
	"strings"
)

// commitTable maps every folded commit to its lineage root and whether it
// is counted in a lineage's unique commits. With 100k commits a Go map
// costs ~70 ms to decode (gob) and as much to encode, which `log` would pay
// on every run; this table persists as one sorted string (key \x00 root
// \x00 flag \n ...) that loads with a single scan for line starts, and
// keeps entries added since the load in a small map, merged on save.
type commitTable struct {
	Data  string // sorted entries, persisted
	offs  []int32
	extra map[string]commitInfo
}

type commitInfo struct {
	Root    string
	Counted bool // counted in its lineage's unique commits
}

func cleanKey(s string) string {
	if strings.ContainsAny(s, "\x00\n") {
		return strings.NewReplacer("\x00", " ", "\n", " ").Replace(s)
	}
	return s
}

func (t *commitTable) index() {
	if t.offs != nil || t.Data == "" {
		return
	}
	t.offs = make([]int32, 0, strings.Count(t.Data, "\n"))
	for i := 0; i < len(t.Data); {
		t.offs = append(t.offs, int32(i))
		j := strings.IndexByte(t.Data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
}

// seek returns the offset in Data of the first entry, from offset lo (an
// entry start), whose key is ≥ c, or len(Data): a binary search over bytes
// that snaps each probe to the start of its line, so that a load needs no
// table of line starts (1M commits: a 20 MB scan and 4 MB of offsets).
func (t *commitTable) seek(c string, lo int) int {
	hi := len(t.Data)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		start := lo + strings.LastIndexByte(t.Data[lo:mid], '\n') + 1
		line, end := t.lineAt(start)
		key, _, _ := strings.Cut(line, "\x00")
		if key < c {
			lo = end
		} else {
			hi = start
		}
	}
	return lo
}

// lineAt returns the entry starting at offset i (without its newline) and
// the offset of the next one.
func (t *commitTable) lineAt(i int) (line string, next int) {
	line = t.Data[i:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		return line[:j], i + j + 1
	}
	return line, len(t.Data)
}

func parseEntry(line string) (key string, info commitInfo) {
	key, rest, _ := strings.Cut(line, "\x00")
	root, flag, _ := strings.Cut(rest, "\x00")
	return key, commitInfo{Root: root, Counted: flag == "1"}
}

// Get returns the info of commit c.
func (t *commitTable) Get(c string) (commitInfo, bool) {
	c = cleanKey(c)
	if info, ok := t.extra[c]; ok {
		return info, true
	}
	if i := t.seek(c, 0); i < len(t.Data) {
		line, _ := t.lineAt(i)
		if k, info := parseEntry(line); k == c {
			return info, true
		}
	}
	return commitInfo{}, false
}

// Set records the info of commit c.
func (t *commitTable) Set(c string, info commitInfo) {
	if t.extra == nil {
		t.extra = map[string]commitInfo{}
	}
	t.extra[cleanKey(c)] = info
}

// Len is the number of commits.
func (t *commitTable) Len() int {
	t.compact()
	t.index()
	return len(t.offs)
}

// compact merges the extra entries into Data: the entries between them are
// copied as they are, found by seek.
func (t *commitTable) compact() {
	if len(t.extra) == 0 {
		return
	}
	keys := make([]string, 0, len(t.extra))
	for k := range t.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	data := t.Data
	if data != "" && data[len(data)-1] != '\n' {
		data += "\n"
		t.Data = data
	}
	var b strings.Builder
	b.Grow(len(data) + 32*len(keys))
	prev := 0
	for _, k := range keys {
		i := t.seek(k, prev)
		b.WriteString(data[prev:i])
		if i < len(data) {
			if line, next := t.lineAt(i); strings.HasPrefix(line, k+"\x00") || line == k {
				i = next // replaced
			}
		}
		prev = i
		info := t.extra[k]
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(cleanKey(info.Root))
		b.WriteByte(0)
		if info.Counted {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
		b.WriteByte('\n')
	}
	b.WriteString(data[prev:])
	t.Data, t.offs, t.extra = b.String(), nil, nil
}
