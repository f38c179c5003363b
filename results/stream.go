package results

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Source opens a results.tsv from its start. Scan and Each read it once
// per pass and keep no rows between passes, so a file of any length is
// understood in memory that does not grow with it (issue 24 item 15).
// Every call must give the same bytes.
type Source func() (io.Reader, error)

// BytesSource is the Source of data held in memory.
func BytesSource(data []byte) Source {
	return func() (io.Reader, error) { return bytes.NewReader(data), nil }
}

// Line kinds, as Parse sorts them.
const (
	kindBlank = iota
	kindComment
	kindData
)

var bom = []byte("\uFEFF")

// scanLines splits r into lines and fields exactly as Parse describes and
// calls fn with each line's number, kind and fields (nil for a blank line).
func scanLines(r io.Reader, fn func(no, kind int, fields []string) error) (literalTabs bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, _ := br.Peek(len(bom)); bytes.Equal(b, bom) {
		_, _ = br.Discard(len(bom))
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), math.MaxInt)
	sc.Split(splitLine)
	sawData := false
	for no := 1; sc.Scan(); no++ {
		line := string(sc.Bytes())
		if !utf8.ValidString(line) {
			line = strings.ToValidUTF8(line, "\uFFFD")
		}
		trimmed := strings.TrimSpace(line)
		if !sawData && trimmed != "" && trimmed[0] != '#' && !strings.Contains(line, "\t") && strings.Contains(line, `\t`) {
			// A header written with a literal backslash-t (printf
			// without interpretation): the file means tabs.
			literalTabs = true
		}
		if literalTabs && !strings.Contains(line, "\t") {
			line = strings.ReplaceAll(line, `\t`, "\t")
		}
		switch {
		case trimmed == "":
			err = fn(no, kindBlank, nil)
		case trimmed[0] == '#':
			err = fn(no, kindComment, SplitFields(strings.TrimSpace(trimmed[1:])))
		default:
			sawData = true
			err = fn(no, kindData, SplitFields(line))
		}
		if err != nil {
			return literalTabs, err
		}
	}
	return literalTabs, sc.Err()
}

// splitLine is a bufio.SplitFunc for lines ended by LF, CRLF or a lone CR.
func splitLine(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0 && atEOF && len(data) > 0:
		return len(data), data, nil
	case i < 0:
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	}
	return 0, nil, nil // a CR at the end of the buffer: is an LF next?
}

// shape is what the first pass learns: the header, the commented lines
// that could replace it, and how many rows have each width.
type shape struct {
	literalTabs    bool
	header         *Line        // the first data line, when it looks like a header
	headerComments map[int]Line // by width, the first comment that looks like a header
	widths         map[int]int  // rows (data lines after the header) by field count
	rows           int          // rows
	comments       int          // '#' lines
	last           int          // line number of the last row
}

// modalWidth is the most common field count among rows and how many have it.
func (sh *shape) modalWidth() (w, n int) {
	for k, c := range sh.widths {
		if c > n || (c == n && k > w) {
			w, n = k, c
		}
	}
	return w, n
}

func readShape(src Source) (*shape, error) {
	r, err := src()
	if err != nil {
		return nil, err
	}
	sh := &shape{headerComments: map[int]Line{}, widths: map[int]int{}}
	first := true
	sh.literalTabs, err = scanLines(r, func(no, kind int, f []string) error {
		switch {
		case kind == kindComment:
			sh.comments++
			if _, ok := sh.headerComments[len(f)]; !ok && looksLikeHeader(f) {
				sh.headerComments[len(f)] = Line{No: no, Fields: f}
			}
		case kind == kindData && first && looksLikeHeader(f):
			first = false
			sh.header = &Line{No: no, Fields: f}
		case kind == kindData:
			first = false
			sh.widths[len(f)]++
			sh.rows++
			sh.last = no
		}
		return nil
	})
	return sh, err
}

// colStats is what the second pass counts per column: over rows of the
// table's width, numbers and text cells, whether the numbers vary, and (for
// a file without a header) cells that look like hashes or status words;
// over all rows, the length of the text.
type colStats struct {
	width     int
	all, rows int // rows; rows of the table's width
	num, text []int
	first     []float64
	varies    []bool
	hashes    []int
	statuses  []int
	textLen   []int
	byValue   bool
}

func newColStats(width int, byValue bool) *colStats {
	return &colStats{width: width, byValue: byValue, num: make([]int, width), text: make([]int, width), first: make([]float64, width),
		varies: make([]bool, width), hashes: make([]int, width), statuses: make([]int, width), textLen: make([]int, width)}
}

func (st *colStats) add(f []string) {
	st.all++
	for i := 0; i < st.width && i < len(f); i++ {
		st.textLen[i] += len(col(f, i))
	}
	if len(f) != st.width {
		return
	}
	st.rows++
	for i := range st.width {
		v := col(f, i)
		if st.byValue {
			if IsHash(v) || v == "HEAD" || strings.HasSuffix(v, "-dirty") {
				st.hashes[i]++
			}
			if _, ok := defaultStatus[NormStatus(v)]; ok {
				st.statuses[i]++
			}
		}
		if v == "" || isMissingWord(v) {
			continue
		}
		if x, ok := ParseNumber(v); ok {
			if st.num[i] == 0 {
				st.first[i] = x
			} else if x != st.first[i] {
				st.varies[i] = true
			}
			st.num[i]++
		} else {
			st.text[i]++
		}
	}
}

// rows streams the data lines after the header (every line that becomes
// an entry or a skip), with their line numbers.
func (sh *shape) eachRow(src Source, fn func(r Line) error) error {
	r, err := src()
	if err != nil {
		return err
	}
	_, err = scanLines(r, func(no, kind int, f []string) error {
		if kind != kindData || (sh.header != nil && no == sh.header.No) {
			return nil
		}
		return fn(Line{No: no, Fields: f})
	})
	return err
}
