package ops

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/report"
	"github.com/memorylab/memorylab/runlog"
)

// maxCurveRead bounds how much of a training's output the curve parser
// reads (the archive keeps at most ledger.MaxArchivedLog of it anyway).
const maxCurveRead = 64 << 20

// CurveOf parses the training curve of the output at path with the store's
// patterns; nil when it has no step lines.
func CurveOf(s *ledger.Store, path string) (*runlog.Curve, error) {
	f, _, err := ledger.OpenRegular(path, path, "run log", "")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return runlog.ParseCurve(io.LimitReader(f, maxCurveRead), s.Config.CurvePatterns)
}

// curveFile is runs/<id>/curve.json for the archive, or nil (no step
// lines, or a curve pattern that does not compile: a note, never a refusal).
func curveFile(env Env, s *ledger.Store, logPath string) *ledger.ArchiveFile {
	c, err := CurveOf(s, logPath)
	if err != nil {
		env.notef("note: no training curve: %v", err)
		return nil
	}
	if c == nil {
		return nil
	}
	b, err := runlog.MarshalCurve(c)
	if err != nil {
		return nil
	}
	return &ledger.ArchiveFile{Key: "curve_path", Name: ledger.CurveFileName, Data: b}
}

// ArchivedCurve reads runs/<id>/curve.json; nil, nil when the run has none.
func ArchivedCurve(s *ledger.Store, id ledger.RunID) (*runlog.Curve, error) {
	dir, err := s.RunDir(id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, ledger.CurveFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return runlog.DecodeCurve(b)
}

// morningCurves are the champion's and the baseline's archived curves, for
// the HTML report; none when neither has one.
func morningCurves(s *ledger.Store, m *report.Morning) []report.RunCurve {
	var out []report.RunCurve
	add := func(label, id, status string) {
		if id == "" {
			return
		}
		for _, c := range out {
			if c.RunID == id {
				return
			}
		}
		if c, err := ArchivedCurve(s, ledger.RunID(id)); err == nil && c != nil {
			out = append(out, report.RunCurve{Label: label, RunID: id, Crash: status == ledger.StatusCrash, Curve: c})
		}
	}
	if c := m.Headline.Champion; c != nil {
		add("champion", c.RunID, ledger.StatusKeep)
	}
	if b := m.Progress.Baseline; b != nil {
		add("baseline", b.RunID, "")
	}
	return out
}
