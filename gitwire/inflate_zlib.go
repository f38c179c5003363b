package gitwire

import (
	"bytes"
	"io"

	"github.com/klauspost/compress/zlib"
)

// Inflater reads one zlib stream (a pack entry's content) after another
// with one decompressor: Reset starts the next stream from r. When r is an
// io.ByteReader, reading stops exactly at the stream's end (its Adler-32),
// so the next entry of a pack starts where it left r.
//
// It is github.com/klauspost/compress's zlib, which inflates ledger
// records 10-20% faster than the standard library's
// (BenchmarkInflateRecords), the reader of NewCompressor's streams.
type Inflater interface {
	io.Reader
	Reset(r io.Reader) error
}

type inflater struct{ zr io.ReadCloser }

func (z *inflater) Read(p []byte) (int, error) { return z.zr.Read(p) }

func (z *inflater) Reset(r io.Reader) error { return z.zr.(zlib.Resetter).Reset(r, nil) }

// emptyStream is a zlib stream of nothing, to create a reader before the
// first Reset.
var emptyStream = []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}

// NewInflater returns an Inflater; Reset it before reading.
func NewInflater() (Inflater, error) {
	zr, err := zlib.NewReader(bytes.NewReader(emptyStream))
	if err != nil {
		return nil, err
	}
	return &inflater{zr: zr}, nil
}
