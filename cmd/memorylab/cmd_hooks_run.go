package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

type hooksRunOptions struct {
	Store string
	Hook  string   // post-commit or commit-msg
	Args  []string // git's hook arguments (commit-msg: the message file)
}

func hooksRunCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "what the installed hooks call: check the commit message against the ledger",
		UsageText: "memorylab hooks run post-commit | commit-msg MESSAGE_FILE",
		Description: "post-commit reads the new HEAD commit's message through go-git and prints one warning line\n" +
			"when the novelty guard says the idea was tried before; it always exits 0. commit-msg reads the\n" +
			"message file git passes and exits 2 when the guard blocks it (installed by hooks install --block).",
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usagef("hooks run needs the hook name: post-commit or commit-msg")
			}
			return runHooksRun(env, hooksRunOptions{Store: c.String("store"), Hook: c.Args().First(), Args: c.Args().Tail()})
		},
	}
}

// hookWarnWidth caps the warning line so it stays one terminal line.
const hookWarnWidth = 200

func runHooksRun(env *Env, opts hooksRunOptions) error {
	var msg string
	switch opts.Hook {
	case gitrepo.HookPostCommit:
		repo, err := gitrepo.OpenRepo(env.Dir)
		if err != nil {
			fmt.Fprintf(env.Err, "memorylab: post-commit hook: %v\n", err)
			return nil // never fail a commit that already happened
		}
		if _, msg, err = repo.HeadMessage(); err != nil {
			fmt.Fprintf(env.Err, "memorylab: post-commit hook: %v\n", err)
			return nil
		}
	case gitrepo.HookCommitMsg:
		if len(opts.Args) != 1 {
			return usagef("hooks run commit-msg needs the message file git passes, got %d arguments", len(opts.Args))
		}
		b, err := os.ReadFile(env.abs(opts.Args[0]))
		if err != nil {
			return ledger.BadInputf("unable to read commit message %s: %v", opts.Args[0], ops.UnwrapPathErr(err))
		}
		msg = string(b)
	default:
		return usagef("hooks run: unknown hook %q: use post-commit or commit-msg", opts.Hook)
	}
	subject := commitSubject(msg)
	if subject == "" {
		return nil
	}
	res, err := hookCheck(env, opts.Store, subject, opts.Hook)
	if err != nil {
		if opts.Hook == gitrepo.HookPostCommit {
			fmt.Fprintf(env.Err, "memorylab: post-commit hook: novelty check skipped: %v\n", err)
			return nil
		}
		return err
	}
	if opts.Hook == gitrepo.HookPostCommit {
		// Another machine training this idea now (issue 29.2).
		for _, c := range res.Claims {
			fmt.Fprintln(env.Err, hookClaimLine(c))
		}
	}
	if res.Classification == novelty.Novel && duplicateCode(res) == nil {
		return nil
	}
	line := hookWarning(subject, res)
	if opts.Hook == gitrepo.HookCommitMsg {
		if res.Policy.Decision != novelty.Block {
			return nil // the post-commit hook warns after the commit
		}
		fmt.Fprintln(env.Err, line)
		fmt.Fprintln(env.Err, "memorylab: commit refused by the novelty guard; change the idea, or commit with --no-verify")
		return blockedError{}
	}
	fmt.Fprintln(env.Err, line)
	return nil
}

// hookCheck runs the novelty guard on a commit subject, in exploit mode at
// the base threshold: what `memorylab check -d SUBJECT` says, through the
// same bleve index (read-only), so a hook never reads the whole ledger.
// post-commit also checks HEAD's code (the commit just made); commit-msg
// runs before the commit exists and judges the subject alone.
func hookCheck(env *Env, store, subject, hook string) (*ops.CheckResult, error) {
	oenv := env.opsEnv(store)
	s, _, err := oenv.Open()
	if err != nil {
		return nil, err
	}
	in := ops.CheckInput{Idea: ops.Idea{Description: subject, Mode: novelty.ModeExploit, Threshold: novelty.BaseThreshold}, Limit: 1}
	if hook == gitrepo.HookPostCommit {
		in.Diff, in.CodeOptional = "HEAD", true
	} else {
		in.RecordAs = ops.BlockedByHook // commit-msg refuses the commit on a block
		in.NoClaims = true              // commit-msg refuses on the guard's verdict alone
	}
	return ops.CheckIdea(oenv, s, in)
}

// duplicateCode is the first earlier run of the same code, if any.
func duplicateCode(res *ops.CheckResult) *ops.CodeMatch {
	if res.Code == nil || len(res.Code.DuplicateCode) == 0 {
		return nil
	}
	return &res.Code.DuplicateCode[0]
}

// hookWarning is the one line a hook prints. Ledger text is folded to one
// line and stripped of control characters: it is only ever printed.
func hookWarning(subject string, res *ops.CheckResult) string {
	line := fmt.Sprintf("memorylab: novelty %s (policy: %s): %q", res.Classification, res.Policy.Decision, display.Line(subject))
	if d := duplicateCode(res); d != nil {
		what := "the same change"
		if d.Same == "result" {
			what = "the same code"
		}
		line = fmt.Sprintf("memorylab: duplicate_code (policy: %s): %q is %s as run %s (%s)", res.Policy.Decision, display.Line(subject), what, d.RunID, d.Status)
	} else if len(res.TopMatches) > 0 {
		m := res.TopMatches[0]
		line += fmt.Sprintf(" resembles run %s (%s, score %.2f): %s", m.RunID, m.Status, m.Score, display.Line(m.Description))
	}
	if r := []rune(line); len(r) > hookWarnWidth {
		line = string(r[:hookWarnWidth-1]) + "…"
	}
	return line
}

// hookClaimLine is one claim in flight as the post-commit hook says it.
func hookClaimLine(c ops.ClaimMatch) string {
	what := "the same change"
	if c.Same == "description" {
		what = "a similar idea"
	}
	line := fmt.Sprintf("memorylab: in flight: %s is training on %s (pid %d) since %s: %q", what, display.Line(c.Host), c.PID,
		c.Start.UTC().Format(time.RFC3339), display.Line(c.Description))
	if r := []rune(line); len(r) > hookWarnWidth {
		line = string(r[:hookWarnWidth-1]) + "…"
	}
	return line
}

// commitSubject is the first non-empty, non-comment line of a message.
func commitSubject(msg string) string {
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		return l
	}
	return ""
}
