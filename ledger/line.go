package ledger

import (
	"bufio"
	"errors"
	"fmt"
)

// readLine reads one line (with its newline, if any) from br in memory
// bounded by MaxRecordBytes: a longer line is read through and dropped, and
// comes back as nil with long set and n its length, so a 1 GB torn line
// costs every reader one pass, not a gigabyte. err is io.EOF for the last
// line when it has no newline (and for the end, with n 0).
func ReadLine(br *bufio.Reader) (line []byte, n int64, long bool, err error) {
	line, n, long, err = readLineAppend(br, nil)
	if long {
		line = nil
	}
	return line, n, long, err
}

// readLineAppend is ReadLine appending the line to buf (unchanged but for
// its length when the line is long) and returning it grown. Slices grow by
// doubling: append grows large ones by a quarter, which allocated 80 MiB to
// learn that a line is over 16 MiB.
func readLineAppend(br *bufio.Reader, buf []byte) (out []byte, n int64, long bool, err error) {
	start := len(buf)
	for {
		frag, ferr := br.ReadSlice('\n')
		n += int64(len(frag))
		if !long {
			switch need := len(buf) + len(frag); {
			case int64(need-start) > MaxRecordBytes:
				long, buf = true, buf[:start]
			case need > cap(buf):
				grown := make([]byte, len(buf), max(2*cap(buf), need))
				copy(grown, buf)
				buf = append(grown, frag...)
			default:
				buf = append(buf, frag...)
			}
		}
		if errors.Is(ferr, bufio.ErrBufferFull) {
			continue
		}
		return buf, n, long, ferr
	}
}

// longLineReason is the warning for a line over MaxRecordBytes.
func LongLineReason(n int64) string {
	return fmt.Sprintf("a line of %d bytes, over the %d bytes a record may have: skipped", n, MaxRecordBytes)
}

// MaxRecordBytes is the largest record a reader accepts from a remote
// ledger blob (and the longest ledger line doctor reads).
const MaxRecordBytes = 16 << 20
