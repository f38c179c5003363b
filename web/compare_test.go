package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareCarriesTheDiffTheAppReads (issue 31.3): /api/compare returns
// the code diff under code_diff, and app.js reads that key; the browser
// test checks the diff is on screen.
func TestCompareCarriesTheDiffTheAppReads(t *testing.T) {
	f := newFixture(t)
	recs := f.night()
	_, ts := f.server(Options{})
	res, body := get(t, ts.URL+"/api/compare?a="+string(recs[0].RunID)+"&b=champion", nil)
	if res.StatusCode != 200 {
		t.Fatalf("compare: %d %s", res.StatusCode, body)
	}
	var c map[string]any
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	diff, _ := c["code_diff"].(string)
	if !strings.Contains(diff, "train.py") || !strings.Contains(diff, "+LR = 0.") {
		t.Fatalf("code_diff = %q", diff)
	}
	_, js := get(t, ts.URL+"/assets/app.js", nil)
	if !strings.Contains(string(js), "c.code_diff") || strings.Contains(string(js), "c.diff") {
		t.Error("app.js does not read code_diff from /api/compare")
	}
}

// TestFavicon: the icon browsers ask for is served, not a 404.
func TestFavicon(t *testing.T) {
	f := newFixture(t)
	_, ts := f.server(Options{})
	res, body := get(t, ts.URL+"/favicon.ico", nil)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(string(body), "<svg") {
		t.Fatalf("favicon: %d %s %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	if res, _ := get(t, ts.URL+"/assets/favicon.svg", nil); res.StatusCode != 200 {
		t.Fatalf("the icon the page links: %d", res.StatusCode)
	}
}
