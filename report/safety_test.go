package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// evilDescriptions are agent-written texts that must neither break a
// markdown table nor inject anything into the HTML.
var evilDescriptions = []string{
	"pipe | in | the | middle",
	"two\nlines\r\nand more",
	"`backticks` and ``` fences",
	"<script>alert('x')</script>",
	"[click](javascript:alert(1)) <a href=\"javascript:alert(2)\">a</a>",
	"# heading\n## another",
	"<img src=x onerror=alert(3)>",
	"**bold** _em_ ~~strike~~ &amp; \\| escaped pipe",
}

func evilRecords(t *testing.T) []ledger.Record {
	recs := corpusRecords(t)
	for i := range recs {
		recs[i].Description = evilDescriptions[i%len(evilDescriptions)]
		recs[i].Commit = recs[i].Commit + "`|"
	}
	return recs
}

// unescapedPipes counts table column separators in a markdown row.
func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if line[i] == '|' {
			n++
		}
	}
	return n
}

func TestSafety(t *testing.T) {
	recs := evilRecords(t)
	m := morningOf(recs, registry.Goal{Metric: "val_bpb"}, corpusNow)
	// Parameter names and values come from a repository's code: as hostile
	// as any record text.
	m.Swept = []SweptParam{{Name: "LR|`x`\n# heading", File: "a|b.py", Runs: 2, Values: 2, BestValue: "`rm -rf`|\r\n| x |",
		Champion: "\x1b]52;c;aGk=\x07<script>"}}
	md := string(m.Markdown())
	if strings.ContainsAny(md, "\x1b\x07") {
		t.Error("a control character reached the report")
	}
	var cols int
	inTable := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "# Morning Report") && !strings.HasPrefix(line, "## ") {
			t.Errorf("agent text became a heading: %q", line)
		}
		if strings.HasPrefix(line, "## ") {
			switch strings.TrimPrefix(line, "## ") {
			case "Headline", "Decision Queue", "Champion Board", "Progress", "Plateau", "Best Lineages", "Failure Clusters", "Recent Ledger", "What was swept":
			default:
				t.Errorf("unexpected section %q", line)
			}
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if !inTable {
			cols, inTable = unescapedPipes(line), true
			continue
		}
		if got := unescapedPipes(line); got != cols {
			t.Errorf("row has %d separators, header %d: %q", got, cols, line)
		}
	}
	page, err := m.HTML()
	if err != nil {
		t.Fatal(err)
	}
	low := strings.ToLower(string(page))
	// Every tag in the page is one the report itself writes, with no event
	// handler attributes and no javascript: URLs.
	allowed := map[string]bool{}
	for _, tag := range strings.Fields("!doctype html head meta title style body main h1 h2 p ul li code table thead tbody tr th td br strong em del figure figcaption svg text line circle path g") {
		allowed[tag] = true
	}
	for _, m := range tagRE.FindAllStringSubmatch(low, -1) {
		if !allowed[m[1]] {
			t.Errorf("HTML contains a <%s> element: %q", m[1], m[0])
		}
		if onAttrRE.MatchString(m[0]) || strings.Contains(m[0], "javascript:") {
			t.Errorf("HTML tag carries script: %q", m[0])
		}
	}
	// The text itself is still shown, escaped.
	for _, want := range []string{"&lt;script&gt;alert(", "pipe | in | the | middle"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("HTML lacks escaped text %q", want)
		}
	}
	if n := strings.Count(low, "<table>"); n != 6 { // five sections and What was swept
		t.Errorf("HTML has %d tables, want 6", n)
	}
}

var (
	tagRE    = regexp.MustCompile(`<(!?[a-z][a-z0-9]*)[^>]*>`)
	onAttrRE = regexp.MustCompile(`\son[a-z]+\s*=`)
)
