package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/memorylab/memorylab/ledger"
)

// programFile is the agent's instructions in an autoresearch repository.
const programFile = "program.md"

// agentSectionHeading marks memorylab's section in program.md; init --agent
// finds it to stay idempotent.
const agentSectionHeading = "## Research memory (memorylab)"

var agentSection = template.Must(template.New("agent").Parse(agentSectionHeading + `

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

// agentSectionText renders the section for a store.
func agentSectionText(cfg ledger.Config, storeRel string) string {
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

// setupAgentProgram writes program.md with memorylab's section when the
// worktree has none; prints the section when program.md exists without it
// (it is the user's file: memorylab does not rewrite it); says so when the
// section is already there.
func setupAgentProgram(env *Env, loc ledger.Location, cfg ledger.Config) error {
	root := env.Dir
	if loc.Repo != nil {
		root = loc.Repo.WorktreeRoot
	}
	storeRel := ledger.DefaultStoreDir
	if r, err := filepath.Rel(root, loc.StoreDir); err == nil && !strings.HasPrefix(r, "..") {
		storeRel = filepath.ToSlash(r)
	}
	section := agentSectionText(cfg, storeRel)
	path := filepath.Join(root, programFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.WriteFile(path, []byte("# autoresearch\n\n"+section), 0o644); err != nil {
			return fmt.Errorf("unable to write %s: %w", path, err)
		}
		fmt.Fprintf(env.Out, "wrote %s with the memorylab section for your agent\n", path)
		return nil
	case err != nil:
		return fmt.Errorf("unable to read %s: %w", path, err)
	case bytes.Contains(b, []byte(agentSectionHeading)):
		fmt.Fprintf(env.Out, "%s already has the memorylab section (%q); nothing changed\n", path, agentSectionHeading)
		return nil
	}
	fmt.Fprintf(env.Err, "memorylab: note: %s exists and is yours: add this section to it (memorylab does not rewrite it)\n", path)
	fmt.Fprint(env.Out, section)
	return nil
}
