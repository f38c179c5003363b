package ops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// ProgramFile is the agent's instructions in an autoresearch repository.
const ProgramFile = "program.md"

// AgentSectionHeading marks memorylab's section in program.md; init --agent
// finds it to stay idempotent.
const AgentSectionHeading = "## Research memory (memorylab)"

var agentSection = template.Must(template.New("agent").Parse(AgentSectionHeading + `

Every experiment in this repository is recorded by memorylab: metrics, crash tails, the code of each run (also
of runs that were reset away), novelty verdicts and the morning report. Use it instead of your own notes, and do
not edit ` + "`results.tsv`" + ` or ` + "`{{.Store}}/`" + ` by hand (memorylab keeps them).

1. **Before editing ` + "`{{.Train}}`" + `** for an idea, ask whether it is new:
   ` + "`memorylab check -d \"<the idea in one line>\" --tags <tag,tag>`" + ` (or the ` + "`check`" + ` tool when memorylab is
   connected over MCP). If the decision is ` + "`block`" + `, it was already run — the output names the run and its
   result — so pick another idea. ` + "`caution`" + ` means a close relative exists: read its result first.
2. **Commit** the change with the idea as the subject: ` + "`git commit -am \"<the idea in one line>\"`" + `.
3. **Train through memorylab**: ` + "`memorylab run --reset-on-discard -- uv run train.py`" + `. It writes the
   output to run.log, reads {{.Metric}} ({{.Direction}} is better), logs the run with its code and crash tail, keeps
   the commit when {{.Metric}} improved and otherwise resets it (the code stays pinned, so nothing is lost).
   Its exit status and ` + "`--json`" + ` output say what happened; never edit results.tsv yourself.
4. **Every ~10 runs, read the report**: ` + "`memorylab report --json`" + ` (or the ` + "`report`" + ` tool). Follow its
   ` + "`plateau`" + ` verdict (a plateau means: change direction, not step size) and its ` + "`decision_queue`" + `
   (retry, branch or drop).
`))

// AgentSectionText renders the section for a store.
func AgentSectionText(cfg ledger.Config, storeRel string) string {
	dir := "lower"
	if cfg.Goal == ledger.GoalMax {
		dir = "higher"
	}
	train := cfg.TrainFile
	if train == "" {
		train = "train.py"
	}
	var b bytes.Buffer
	_ = agentSection.Execute(&b, map[string]string{"Metric": cfg.Metric, "Direction": dir, "Train": train, "Store": storeRel})
	return b.String()
}

// What SetupAgentProgram did with program.md.
const (
	ProgramWritten = "written" // there was none: written with the section
	ProgramPresent = "present" // the section is already there: nothing changed
	ProgramPrint   = "print"   // the file is the user's: the section is returned to show them
)

// ProgramResult is where program.md is and what happened to it.
type ProgramResult struct {
	Path    string
	Action  string // ProgramWritten, ProgramPresent or ProgramPrint
	Section string
}

// SetupAgentProgram writes program.md with memorylab's section when the
// worktree has none. An existing program.md is the user's: memorylab never
// rewrites it, and returns the section for them to add (ProgramPrint)
// unless it is already there.
func SetupAgentProgram(env Env, loc gitrepo.Location, cfg ledger.Config) (*ProgramResult, error) {
	root := env.Dir
	if loc.Repo != nil {
		root = loc.Repo.WorktreeRoot
	}
	storeRel := ledger.DefaultStoreDir
	if r, err := filepath.Rel(root, loc.StoreDir); err == nil && !strings.HasPrefix(r, "..") {
		storeRel = filepath.ToSlash(r)
	}
	res := &ProgramResult{Path: filepath.Join(root, ProgramFile), Section: AgentSectionText(cfg, storeRel)}
	b, err := os.ReadFile(res.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := atomicfile.WriteFileAtomic(res.Path, []byte("# autoresearch\n\n"+res.Section), 0o644); err != nil {
			return nil, fmt.Errorf("unable to write %s: %w", res.Path, err)
		}
		res.Action = ProgramWritten
	case err != nil:
		return nil, fmt.Errorf("unable to read %s: %w", res.Path, err)
	case bytes.Contains(b, []byte(AgentSectionHeading)):
		res.Action = ProgramPresent
	default:
		res.Action = ProgramPrint
	}
	return res, nil
}
