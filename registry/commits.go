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

func (t *commitTable) entry(i int) (key string, info commitInfo) {
	line := t.Data[t.offs[i]:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
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
	t.index()
	i := sort.Search(len(t.offs), func(i int) bool { k, _ := t.entry(i); return k >= c })
	if i < len(t.offs) {
		if k, info := t.entry(i); k == c {
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
	return len(t.offs)
}

// compact merges the extra entries into Data.
func (t *commitTable) compact() {
	t.index()
	if len(t.extra) == 0 {
		return
	}
	keys := make([]string, 0, len(t.extra))
	for k := range t.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Grow(len(t.Data) + 32*len(keys))
	write := func(k string, info commitInfo) {
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
	i, j := 0, 0
	for i < len(t.offs) || j < len(keys) {
		var k string
		var info commitInfo
		if i < len(t.offs) {
			k, info = t.entry(i)
		}
		switch {
		case i < len(t.offs) && (j >= len(keys) || k < keys[j]):
			write(k, info)
			i++
		case i < len(t.offs) && k == keys[j]:
			write(k, t.extra[k])
			i++
			j++
		default:
			write(keys[j], t.extra[keys[j]])
			j++
		}
	}
	t.Data, t.offs, t.extra = b.String(), nil, nil
	t.index()
}
