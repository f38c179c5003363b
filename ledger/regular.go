package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrBadInput marks input memorylab cannot use (bad flags, log, summary).
// Test for it with errors.Is; BadInputf makes such errors without putting
// "bad input:" in front of a message that already says what is wrong.
var ErrBadInput = errors.New("bad input")

// badInputError is an ErrBadInput whose message is shown as it is.
type badInputError struct{ msg string }

func (e *badInputError) Error() string        { return e.msg }
func (e *badInputError) Is(target error) bool { return target == ErrBadInput }

// BadInputf returns an error that errors.Is(err, ErrBadInput) and reads as
// the formatted message alone.
func BadInputf(format string, a ...any) error {
	return &badInputError{msg: fmt.Sprintf(format, a...)}
}

// regularExample is how to get a regular file for what.
func regularExample(what string) string {
	switch what {
	case "run log":
		return "python train.py > run.log 2>&1"
	case "summary":
		return "cat <source> > summary.json"
	}
	return "cat <source> > file"
}

// OpenInput opens path for reading without blocking (a FIFO without a
// writer would wait forever) and only when it is a regular file: anything
// else is a *fs.PathError wrapping ErrNotRegular, with its kind in mode.
// Open errors come back as they are (fs.ErrNotExist for a missing file).
func OpenInput(path string) (f *os.File, st os.FileInfo, err error) {
	if f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, st, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	return f, st, nil
}

// OpenRegular is OpenInput for a file the user named: what (e.g. "run
// log"), shown (the path as the user gave it) and hint make the errors,
// each wrapping ErrBadInput.
func OpenRegular(path, shown, what, hint string) (*os.File, os.FileInfo, error) {
	return OpenRegularInput(Input{Name: path, Shown: shown}, what, hint)
}

// OpenRegularInput is OpenRegular of an Input: with a Dir, a path that
// leaves it (through "..", or a link pointing out) is refused too.
func OpenRegularInput(in Input, what, hint string) (*os.File, os.FileInfo, error) {
	f, st, err := in.Open()
	shown := in.Label()
	switch {
	case err == nil:
		return f, st, nil
	case errors.Is(err, ErrNotRegular):
		return nil, nil, BadInputf("%s %s is %s; memorylab reads a regular file: write it to one first (e.g. `%s`)",
			what, shown, describeMode(st.Mode()), regularExample(what))
	case st != nil:
		return nil, nil, BadInputf("unable to read %s %s: %v", what, shown, err)
	}
	if hint != "" {
		hint = "; " + hint
	}
	return nil, nil, BadInputf("unable to read %s %s: %v%s", what, shown, unwrapPath(err), hint)
}

// ReadRegularFile reads a whole input file that must be a regular file of
// at most limit bytes (OpenRegular).
func ReadRegularFile(path, shown, what, hint string, limit int64) ([]byte, error) {
	return ReadRegularInput(Input{Name: path, Shown: shown}, what, hint, limit)
}

// ReadRegularInput is ReadRegularFile of an Input.
func ReadRegularInput(in Input, what, hint string, limit int64) ([]byte, error) {
	shown := in.Label()
	f, st, err := OpenRegularInput(in, what, hint)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, BadInputf("%s %s is %d bytes, over the %d-byte limit", what, shown, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, BadInputf("unable to read %s %s: %v", what, shown, err)
	}
	return b, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
