package ledger

import (
	"errors"
	"testing"
)

// TestParallel: every function runs, and the error returned is the first
// in argument order whatever finishes first.
func TestParallel(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	tests := []struct {
		name string
		errs []error
		want error
	}{
		{"none", nil, nil},
		{"all ok", []error{nil, nil, nil}, nil},
		{"one", []error{nil, errB, nil}, errB},
		{"first in order", []error{nil, errA, errB}, errA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran := make([]bool, len(tc.errs))
			fns := make([]func() error, len(tc.errs))
			for i, e := range tc.errs {
				fns[i] = func() error { ran[i] = true; return e }
			}
			if got := Parallel(fns...); got != tc.want {
				t.Errorf("parallel = %v, want %v", got, tc.want)
			}
			for i, r := range ran {
				if !r {
					t.Errorf("function %d did not run", i)
				}
			}
		})
	}
}
