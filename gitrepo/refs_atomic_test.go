package gitrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/ledger"
)

// refWriteHelperEnv makes the test binary act as a writer whose disk is
// full: see TestRefWriteOnFullDisk.
const refWriteHelperEnv = "MEMORYLAB_TEST_REF_WRITE_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(refWriteHelperEnv); dir != "" {
		os.Exit(refWriteHelper(dir))
	}
	os.Exit(m.Run())
}

// refWriteHelper moves the run ref of idA to the commit named in
// MEMORYLAB_TEST_REF_WRITE_TO with a file size limit of 0 bytes, which
// fails every write as a full disk does (EFBIG; Go ignores SIGXFSZ).
func refWriteHelper(dir string) int {
	repo, err := OpenRepo(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 0, Max: ^uint64(0)}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	name, _ := ledger.RunRef(idA)
	err = repo.r.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), plumbing.NewHash(os.Getenv("MEMORYLAB_TEST_REF_WRITE_TO"))))
	if err == nil {
		fmt.Fprintln(os.Stderr, "the write succeeded with a file size limit of 0")
		return 2
	}
	fmt.Println(err)
	return 1
}

// twoCommits is a scratch repository with two commits, opened.
func twoCommits(t *testing.T) (dir, c1, c2 string, repo *Repo) {
	t.Helper()
	dir = t.TempDir()
	sr, err := InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	c1, _ = sr.Commit("one", map[string]string{"train.py": "1"})
	c2, _ = sr.Commit("two", map[string]string{"train.py": "2"})
	if repo, err = OpenRepo(dir); err != nil {
		t.Fatal(err)
	}
	return dir, c1, c2, repo
}

// TestRefWriteOnFullDisk reproduces issue 17 item 6: a ref update that
// fails for want of space (here a file size limit of 0 in a child process)
// left an empty ref file, on which every later listing of refs failed.
// The ref must keep its old value and the repository stay readable.
func TestRefWriteOnFullDisk(t *testing.T) {
	dir, c1, c2, repo := twoCommits(t)
	if err := repo.PinRun(idA, c1); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), refWriteHelperEnv+"="+dir, "MEMORYLAB_TEST_REF_WRITE_TO="+c2)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("helper: %v %s", err, out)
	}
	if !strings.Contains(string(out), "file too large") {
		t.Fatalf("helper error %q does not name the failed write", out)
	}
	name, _ := ledger.RunRef(idA)
	b, err := os.ReadFile(filepath.Join(dir, ".git", filepath.FromSlash(name)))
	if err != nil || strings.TrimSpace(string(b)) != c1 {
		t.Fatalf("ref after the failed write: %q %v, want %s", b, err, c1)
	}
	repo2, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	pins, err := repo2.Pins()
	if err != nil || pins[idA] != c1 {
		t.Fatalf("pins after the failed write: %v %v", pins, err)
	}
	if broken, err := repo2.BrokenRefs(); err != nil || len(broken) != 0 {
		t.Fatalf("broken refs: %v %v", broken, err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".git", "memorylab-ref.tmp*")); len(tmp) != 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// TestRefReadersNeverSeeEmpty updates a ref many times while a reader reads
// the file: with git's rename protocol the reader sees the old or the new
// value, never an empty or partial file (go-git truncates, then writes).
func TestRefReadersNeverSeeEmpty(t *testing.T) {
	dir, c1, c2, repo := twoCommits(t)
	name := plumbing.ReferenceName(ledger.RefNamespace + "test/flip")
	path := filepath.Join(dir, ".git", filepath.FromSlash(name.String()))
	if err := repo.r.Storer.SetReference(plumbing.NewHashReference(name, plumbing.NewHash(c1))); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		defer close(bad)
		for {
			select {
			case <-done:
				return
			default:
			}
			b, err := os.ReadFile(path)
			if v := strings.TrimSpace(string(b)); err != nil || (v != c1 && v != c2) {
				bad <- fmt.Sprintf("%q %v", b, err)
				return
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
		h := c1
		if i%2 == 0 {
			h = c2
		}
		if err := repo.r.Storer.SetReference(plumbing.NewHashReference(name, plumbing.NewHash(h))); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if b, ok := <-bad; ok {
		t.Fatalf("a reader saw the ref as %s", b)
	}
}

// TestCheckAndSetRefAcrossHandles: a swap based on a stale value fails,
// also when the ref was moved through another handle.
func TestCheckAndSetRefAcrossHandles(t *testing.T) {
	dir, c1, c2, a := twoCommits(t)
	b, _ := OpenRepo(dir)
	name := plumbing.ReferenceName(ledger.RefNamespace + "test/cas")
	ref := func(h string) *plumbing.Reference { return plumbing.NewHashReference(name, plumbing.NewHash(h)) }
	if err := a.r.Storer.SetReference(ref(c1)); err != nil {
		t.Fatal(err)
	}
	if err := b.r.Storer.CheckAndSetReference(ref(c2), ref(c1)); err != nil {
		t.Fatal(err)
	}
	if err := a.r.Storer.CheckAndSetReference(ref(c1), ref(c1)); err == nil {
		t.Fatal("a swap from a stale value succeeded")
	}
	got, err := a.r.Storer.Reference(name)
	if err != nil || got.Hash().String() != c2 {
		t.Fatalf("ref is %v %v, want %s", got, err, c2)
	}
}
