package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

type demoOptions struct {
	Dir  string // where to build the repository (kept); a temp dir when empty
	Keep bool   // keep the temp dir instead of removing it at the end
}

func demoCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "replay an overnight of 30 experiments in a throwaway repository and print where the report is",
		UsageText: "memorylab demo [--keep | --dir DIR]",
		Description: "Builds a scratch git repository, then for each experiment edits train.py, commits, writes a\n" +
			"run.log (summary block or traceback), logs it through the same code as `memorylab log`, and\n" +
			"resets discarded and crashed commits away, exactly as the autoresearch loop does. Works offline.\n" +
			"It prints the morning report and removes the scratch repository, unless --keep (keep the temp\n" +
			"dir) or --dir DIR (build in DIR, a new or empty directory, and keep it) says otherwise.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "build the demo repository in this new or empty directory and keep it"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the temp dir (repository, ledger, reports) instead of removing it"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("demo takes no arguments, got %q", c.Args().First())
			}
			return runDemo(env, demoOptions{Dir: c.String("dir"), Keep: c.Bool("keep")})
		},
	}
}

// demoStep is one experiment of the replayed night.
type demoStep struct {
	desc, family, tags, hypothesis, mode string
	code                                 string  // "NAME = VALUE; …": the constants the experiment sets in train.py
	bpb                                  float64 // 0 means the run crashes
	crash                                string  // the traceback's last line
}

// demoTrain is train.py before the night: the constants the experiments
// edit, as in karpathy's train.py.
const demoTrain = `# train.py: GPT pretraining for a fixed 5 minute budget
DEPTH = 8
ASPECT_RATIO = 64
MODEL_DIM = 768
ACTIVATION = "relu2"
TOTAL_BATCH_SIZE = 2**19
DEVICE_BATCH_SIZE = 128
GRAD_ACCUM = 1
MATRIX_LR = 0.04
EMBEDDING_LR = 0.6
SCALAR_LR = 0.5
EMBEDDING_WD = 0.0
WEIGHT_DECAY = 0.0
MUON_MOMENTUM = 0.95
WARMUP_RATIO = 0.0
WARMDOWN_RATIO = 0.5
ROPE_BASE = 10000
INIT_SCALE = 1.0
VALUE_EMBEDS = True
WINDOW_PATTERN = "L"
SOFTCAP = 30
FINAL_NORM = False
`

// applyDemoCode sets each NAME = VALUE of code in train (every name is one
// of demoTrain's constants).
func applyDemoCode(train, code string) string {
	lines := strings.Split(train, "\n")
	for _, assign := range strings.Split(code, ";") {
		name, _, ok := strings.Cut(strings.TrimSpace(assign), " = ")
		if !ok {
			continue
		}
		for i, l := range lines {
			if strings.HasPrefix(l, name+" = ") {
				lines[i] = strings.TrimSpace(assign)
			}
		}
	}
	return strings.Join(lines, "\n")
}

// demoNight is modelled on real autoresearch sessions: an early run of
// learning-rate and shape wins, then a long plateau of small sweeps.
var demoNight = []demoStep{
	{desc: "baseline", family: "baseline", tags: "baseline", bpb: 0.9979},
	{desc: "increase matrix LR to 0.05", code: `MATRIX_LR = 0.05`, family: "lr-sweep", tags: "lr", hypothesis: "muon tolerates a higher LR", bpb: 0.9932},
	{desc: "increase matrix LR to 0.06", code: `MATRIX_LR = 0.06`, family: "lr-sweep", tags: "lr", bpb: 0.9941},
	{desc: "switch to GeLU activation", code: `ACTIVATION = "gelu"`, family: "activation", tags: "architecture", mode: "explore", bpb: 1.0050},
	{desc: "double model width", code: `MODEL_DIM = 1536`, family: "width", tags: "architecture,width", crash: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."},
	{desc: "halve batch size to 262K", code: `TOTAL_BATCH_SIZE = 2**18`, family: "batching", tags: "batch_size", hypothesis: "more steps beat bigger batches in 5 minutes", bpb: 0.9867},
	{desc: "depth 9 with aspect ratio 57", code: `DEPTH = 9; ASPECT_RATIO = 57`, family: "depth", tags: "architecture,depth", bpb: 0.9841},
	{desc: "increase embedding LR to 0.8", code: `EMBEDDING_LR = 0.8`, family: "lr-sweep", tags: "lr", bpb: 0.9822},
	{desc: "add weight decay 0.1 on embeddings", code: `EMBEDDING_WD = 0.1`, family: "optimizer", tags: "optimizer", bpb: 0.9846},
	{desc: "shorten warmdown to 0.3", code: `WARMDOWN_RATIO = 0.3`, family: "schedule", tags: "schedule", bpb: 0.9851},
	{desc: "switch to SwiGLU activation", code: `ACTIVATION = "swiglu"`, family: "activation", tags: "architecture", mode: "explore", bpb: 0.9830},
	{desc: "increase matrix LR to 0.05", code: `MATRIX_LR = 0.05`, family: "lr-sweep", tags: "lr", bpb: 0.9825},
	{desc: "double model width", code: `MODEL_DIM = 1536`, family: "width", tags: "architecture,width", crash: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."},
	{desc: "RoPE base frequency 200K", code: `ROPE_BASE = 200000`, family: "rope", tags: "architecture", bpb: 0.9761},
	{desc: "init scale 0.68x", code: `INIT_SCALE = 0.68`, family: "init", tags: "init", hypothesis: "smaller init stabilises the first steps", bpb: 0.9709},
	{desc: "remove value embeddings", code: `VALUE_EMBEDS = False`, family: "architecture", tags: "value_embedding", bpb: 0.9790},
	{desc: "window pattern SSSL", code: `WINDOW_PATTERN = "SSSL"`, family: "attention", tags: "attention", bpb: 0.9712},
	{desc: "Muon momentum 0.97", code: `MUON_MOMENTUM = 0.97`, family: "optimizer-sweep", tags: "optimizer", bpb: 0.9710},
	{desc: "gradient accumulation 2 with batch 131K", code: `GRAD_ACCUM = 2; DEVICE_BATCH_SIZE = 64`, family: "batching", tags: "batch_size", crash: "AssertionError"},
	{desc: "softcap logits at 20", code: `SOFTCAP = 20`, family: "logits", tags: "architecture,softcap", bpb: 0.9703},
	{desc: "softcap logits at 15", code: `SOFTCAP = 15`, family: "logits", tags: "architecture,softcap", bpb: 0.9706},
	{desc: "Muon momentum 0.96", code: `MUON_MOMENTUM = 0.96`, family: "optimizer-sweep", tags: "optimizer", bpb: 0.9707},
	{desc: "increase matrix LR to 0.045", code: `MATRIX_LR = 0.045`, family: "lr-sweep", tags: "lr", bpb: 0.9705},
	{desc: "warmup 2 percent of steps", code: `WARMUP_RATIO = 0.02`, family: "schedule", tags: "schedule", bpb: 0.9708},
	{desc: "Muon momentum 0.98", code: `MUON_MOMENTUM = 0.98`, family: "optimizer-sweep", tags: "optimizer", bpb: 0.9709},
	{desc: "weight decay 0.05 on matrices", code: `WEIGHT_DECAY = 0.05`, family: "optimizer", tags: "optimizer", bpb: 0.9704},
	{desc: "softcap logits at 25", code: `SOFTCAP = 25`, family: "logits", tags: "architecture,softcap", bpb: 0.9705},
	{desc: "reduce scalar LR to 0.3", code: `SCALAR_LR = 0.3`, family: "lr-sweep", tags: "lr", bpb: 0.9706},
	{desc: "final norm before unembedding", code: `FINAL_NORM = True`, family: "architecture", tags: "architecture", crash: "RuntimeError: shape mismatch: value tensor of shape [8, 768] cannot be broadcast"},
	{desc: "Muon momentum 0.965", code: `MUON_MOMENTUM = 0.965`, family: "optimizer-sweep", tags: "optimizer", bpb: 0.9704},
}

func runDemo(env *Env, opts demoOptions) (err error) {
	dir := opts.Dir
	cleanup := dir == "" && !opts.Keep
	if dir == "" {
		d, err := os.MkdirTemp("", "memorylab-demo-")
		if err != nil {
			return err
		}
		dir = d
		if cleanup {
			defer func() {
				if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
					err = fmt.Errorf("unable to remove the demo repository: %w", rerr)
				}
			}()
		}
	} else if err := demoDirUsable(dir); err != nil {
		return err
	}
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/demo")
	if err != nil {
		return err
	}
	train := demoTrain
	if _, err := repo.Commit("initial train.py", map[string]string{"train.py": train, ".gitignore": "run.log\nresults/\nresults.tsv\n"}); err != nil {
		return err
	}
	denv := *env
	denv.Dir = dir
	denv.Out = &strings.Builder{}
	start := env.Now().UTC().Add(-time.Duration(len(demoNight)*6) * time.Minute).Truncate(time.Second)
	clock := start
	denv.Now = func() time.Time { return clock }
	if err := runInit(&denv, initOptions{Metric: "val_bpb", Goal: "min", TrainFile: "train.py"}); err != nil {
		return err
	}
	best := 0.0
	logged := map[string]int{}
	for i, st := range demoNight {
		clock = start.Add(time.Duration(i*6) * time.Minute)
		repo.When = clock.Add(-6 * time.Minute)
		parent := train
		train = applyDemoCode(parent, st.code) + fmt.Sprintf("# experiment %d: %s\n", i+1, st.desc)
		commit, err := repo.Commit(st.desc, map[string]string{"train.py": train})
		if err != nil {
			return err
		}
		status := "discard"
		var runLogText string
		switch {
		case st.crash != "":
			status = "crash"
			runLogText = "Vocab size: 8,192\nModel config: ...\nTraceback (most recent call last):\n  File \"train.py\", line 512, in <module>\n    loss.backward()\n" + st.crash + "\n"
		default:
			if best == 0 || st.bpb < best {
				status, best = "keep", st.bpb
			}
			runLogText = fmt.Sprintf("step 00953 (100.0%%) | loss: 3.2 | dt: 315ms\n---\nval_bpb:          %.6f\ntraining_seconds: 300.1\ntotal_seconds:    325.9\npeak_vram_mb:     %.1f\nmfu_percent:      39.80\ntotal_tokens_M:   499.6\nnum_steps:        953\nnum_params_M:     50.3\ndepth:            8\n",
				st.bpb, 45060.2+float64(i*37%1700))
		}
		if err := os.WriteFile(filepath.Join(dir, "run.log"), []byte(runLogText), 0o644); err != nil {
			return err
		}
		mode := st.mode
		if mode == "" {
			mode = "exploit"
		}
		in := ops.LogInput{Idea: ops.Idea{Description: st.desc, Tags: []string{st.tags}, Mode: mode, Family: st.family,
			Hypothesis: st.hypothesis, Threshold: ops.DefaultThreshold}, Status: status, LogPath: "run.log"}
		if _, err := runLog(&denv, "", in, false); err != nil {
			return fmt.Errorf("demo experiment %d (%s): %w", i+1, st.desc, err)
		}
		logged[status]++
		if status != "keep" {
			// The autoresearch loop throws the commit away; memorylab keeps its record.
			if err := repo.ResetHard(parentOf(commit, repo)); err != nil {
				return err
			}
			train = parent
		}
	}
	store := filepath.Join(dir, filepath.FromSlash(ledger.DefaultStoreDir))
	fmt.Fprintf(env.Out, "demo: replayed %d experiments (%d keep, %d discard, %d crash) in %s\n",
		len(demoNight), logged["keep"], logged["discard"], logged["crash"], dir)
	if !cleanup {
		fmt.Fprintf(env.Out, "  ledger:  %s\n", filepath.Join(store, ledger.LedgerFile))
		fmt.Fprintf(env.Out, "  results: %s\n", filepath.Join(dir, ledger.TSVFile))
	}
	for _, format := range []string{"md", "html"} {
		in := ops.DefaultReportInput()
		in.Format = format
		res, err := ops.Report(denv.opsEnv(""), in)
		if err != nil {
			return err
		}
		paths := res.Paths
		if !cleanup {
			fmt.Fprintf(env.Out, "  report:  %s\n", paths[0])
		} else if format == "md" {
			md, err := os.ReadFile(paths[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Out, "\n%s\n", md)
		}
	}
	if cleanup {
		fmt.Fprintf(env.Out, "demo: removed %s; `memorylab demo --keep` (or --dir DIR) keeps the repository, ledger and reports\n", dir)
	}
	return nil
}

// demoDirUsable accepts a --dir that is missing (it is created) or an empty
// directory. Anything else is bad usage: the demo builds a repository of its
// own and must never write into one that exists.
func demoDirUsable(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, syscall.ENOTDIR) {
			return usagef("demo: --dir %s is not a directory", dir)
		}
		return err
	case len(entries) > 0:
		return usagef("demo: --dir %s is not empty; the demo builds its own repository in a new or empty directory", dir)
	}
	return nil
}

func parentOf(commit string, repo *gitrepo.ScratchRepo) string {
	p, _ := repo.Parent(commit)
	return p
}
