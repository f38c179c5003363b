package ops

import (
	"io"
	"sync"
)

// syncWriter serialises writes to w from concurrent goroutines (notices on
// stderr while log reads its caches side by side; tests capture them in a
// bytes.Buffer).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
