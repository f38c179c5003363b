package ops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/ledger"
)

// The code cache's zones ("code.zones", beside "code"): the base cut into
// stretches of about codeZoneBytes, each with the least and the greatest
// run id of its lines. A search for a run's lines, or for the lines of the
// runs whose ids share a prefix, reads only the zones whose range can hold
// them. Run ids start with their time, so a base in ledger order holds a
// report's window, and a champion of the last days, in its last zones,
// wherever a pulled run out of order sits (issue 30: searching the whole
// 48 MB of a million runs for the window's earlier lines was about 20 ms
// of the dashboard's first page and of a warm check). A cache, stamped
// with the base's fingerprint and length: a missing or stale one only
// means the whole base is searched.
const (
	codeZonesName    = "code.zones"
	codeZonesVersion = 1
)

// codeZoneBytes is about how many bytes of lines a zone holds (a variable
// for tests): ~750 zones at a million runs, a 45 KB file.
var codeZoneBytes = 64 << 10

// codeZone is the lines of the base from start to the next zone's start.
// A zone with no run's line has no ids (empty): no search reads it.
type codeZone struct {
	start    int
	min, max string
	empty    bool
}

// zonesOf appends to zones the zones of base's lines from offset from (a
// line's start; 0 for the whole base).
func zonesOf(base []byte, from int, zones []codeZone) []codeZone {
	z := codeZone{start: from, empty: true}
	for i := from; i < len(base); {
		end := bytes.IndexByte(base[i:], '\n')
		if end < 0 {
			end = len(base)
		} else {
			end += i
		}
		if id, _, ok := bytes.Cut(base[i:end], []byte("\t")); ok {
			switch s := string(id); {
			case z.empty:
				z.min, z.max, z.empty = s, s, false
			case s < z.min:
				z.min = s
			case s > z.max:
				z.max = s
			}
		}
		i = end + 1
		if i-z.start >= codeZoneBytes && i < len(base) {
			zones = append(zones, z)
			z = codeZone{start: i, empty: true}
		}
	}
	if from < len(base) {
		zones = append(zones, z)
	}
	return zones
}

// encodeZones is the zones file's payload: the base's length, then a line
// per zone (its start, least and greatest id; "-" for an empty zone).
func encodeZones(baseLen int, zones []codeZone) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", baseLen)
	for _, z := range zones {
		if z.empty {
			fmt.Fprintf(&b, "%d\t-\n", z.start)
			continue
		}
		fmt.Fprintf(&b, "%d\t%s\t%s\n", z.start, z.min, z.max)
	}
	return b.Bytes()
}

// decodeZones reads encodeZones' payload for a base of baseLen bytes; ok
// is false for anything else (another base, a damaged file).
func decodeZones(b []byte, baseLen int) (zones []codeZone, ok bool) {
	head, rest, found := bytes.Cut(b, []byte("\n"))
	if n, err := strconv.Atoi(string(head)); !found || err != nil || n != baseLen {
		return nil, false
	}
	if len(rest) == 0 {
		return nil, baseLen == 0
	}
	for line := range strings.SplitSeq(strings.TrimSuffix(string(rest), "\n"), "\n") {
		f := strings.Split(line, "\t")
		start, err := strconv.Atoi(f[0])
		prev := -1
		if len(zones) > 0 {
			prev = zones[len(zones)-1].start
		}
		if err != nil || start <= prev || start >= max(baseLen, 1) || (prev < 0 && start != 0) {
			return nil, false
		}
		switch {
		case len(f) == 2 && f[1] == "-":
			zones = append(zones, codeZone{start: start, empty: true})
		case len(f) == 3 && f[1] != "" && f[1] <= f[2]:
			zones = append(zones, codeZone{start: start, min: f[1], max: f[2]})
		default:
			return nil, false
		}
	}
	return zones, len(zones) > 0 || baseLen == 0
}

// writeCodeBase writes the code cache's base, stamped with fp, and its
// zones (a cache of a cache: failing to write them only costs searches).
func writeCodeBase(s *ledger.Store, fp ledger.Fingerprint, base []byte, zones []codeZone) error {
	// The old zones go first: a base written after them, and zones not,
	// must not meet zones of another base with the same stamp.
	if err := os.Remove(s.CachePath(codeZonesName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := s.WriteCacheOf(codeCacheName, codeCacheVersion, fp, base); err != nil {
		return err
	}
	_ = s.WriteCache(codeZonesName, codeZonesVersion, fp, encodeZones(len(base), zones))
	return nil
}

// readCodeZones is the zones of base, stamped with fp; nil when they are
// missing or were written for another base (each zone must start a line).
func readCodeZones(s *ledger.Store, fp ledger.Fingerprint, base []byte) []codeZone {
	zfp, b, err := s.ReadCache(codeZonesName, codeZonesVersion)
	if err != nil || zfp != fp {
		return nil
	}
	zones, ok := decodeZones(b, len(base))
	if !ok {
		return nil
	}
	for _, z := range zones {
		if z.start > 0 && base[z.start-1] != '\n' {
			return nil
		}
	}
	return zones
}

// foldedZones is the zones of base after lines were appended to a base of
// n bytes whose zones were old (nil when unknown): its last zone, if not
// full, is cut again with the new lines.
func foldedZones(base []byte, n int, old []codeZone) []codeZone {
	if old == nil || n == 0 {
		return zonesOf(base, 0, nil)
	}
	zones := append([]codeZone(nil), old...)
	if last := zones[len(zones)-1]; n-last.start < codeZoneBytes {
		return zonesOf(base, last.start, zones[:len(zones)-1])
	}
	return zonesOf(base, n, zones)
}

// spans are the stretches of the first n bytes of the base that may hold
// the line of a run whose id is id (exact) or starts with it: every zone
// whose ids can, adjacent ones merged; the whole of them without zones.
func (cs *codeSet) spans(id string, exact bool, n int) [][2]int {
	if cs.zones == nil {
		return [][2]int{{0, n}}
	}
	var out [][2]int
	for i, z := range cs.zones {
		if z.start >= n {
			break
		}
		can := !z.empty && z.max >= id && (z.min <= id || (!exact && strings.HasPrefix(z.min, id)))
		if !can {
			continue
		}
		end := n
		if i+1 < len(cs.zones) {
			end = min(cs.zones[i+1].start, n)
		}
		if k := len(out) - 1; k >= 0 && out[k][1] == z.start {
			out[k][1] = end
			continue
		}
		out = append(out, [2]int{z.start, end})
	}
	return out
}

// eachLineStarting calls fn with the start of every line that starts
// within spans and with the text of needle() after its newline, in order,
// until fn returns false. needle is asked again before each search (its
// text may change). The bytes searched are counted in scanned.
func (cs *codeSet) eachLineStarting(spans [][2]int, needle func() []byte, fn func(start int) bool) {
	b := cs.base
	for _, sp := range spans {
		lo, hi := sp[0], sp[1]
		if lo == 0 && bytes.HasPrefix(b, needle()[1:]) && !fn(0) {
			return
		}
		for from := max(lo-1, 0); ; {
			nd := needle()
			// A line that starts before hi has its newline at hi-2 at the latest.
			limit := min(hi-2+len(nd), len(b))
			if from >= limit {
				break
			}
			i := bytes.Index(b[from:limit], nd)
			if i < 0 {
				cs.scanned += limit - from
				break
			}
			cs.scanned += i + len(nd)
			start := from + i + 1
			if !fn(start) {
				return
			}
			from = start
		}
	}
}
