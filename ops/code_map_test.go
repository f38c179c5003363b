package ops

import (
	"os"
	"reflect"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// TestOpenCodeMapsInAOneShotCommand: check's resurfacing and code verdicts
// open the code cache; a one-shot command maps its base rather than
// reading it (at a million runs, reading the 48 MB was 17,000 page faults:
// a warm check's 100 ms of CPU became 64 ms, issue 30), and sees the same
// runs.
func TestOpenCodeMapsInAOneShotCommand(t *testing.T) {
	defer MapCachesForLife(false)
	env, s, g := sweptLab(t, 2000)
	if _, err := ParamsOf(env, s, g, ParamsInput{}); err != nil { // builds the code cache
		t.Fatal(err)
	}
	st, err := os.Stat(s.CachePath(codeCacheName))
	if err != nil {
		t.Fatal(err)
	}
	var runs [][]RunCode
	for _, mapped := range []bool{false, true} {
		MapCachesForLife(mapped)
		before := ledger.CacheBytesCopied()
		cs, err := openCode(env, s, g)
		if err != nil {
			t.Fatal(err)
		}
		if copied := ledger.CacheBytesCopied() - before; mapped && copied >= st.Size() || !mapped && copied < st.Size() {
			t.Errorf("opening the code cache copied %d bytes; the cache is %d (mapped: %v)", copied, st.Size(), mapped)
		}
		runs = append(runs, cs.all())
	}
	if len(runs[0]) < 2000 || !reflect.DeepEqual(runs[0], runs[1]) {
		t.Errorf("read: %d runs, mapped: %d runs, or not the same", len(runs[0]), len(runs[1]))
	}
}
