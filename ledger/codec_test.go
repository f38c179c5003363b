package ledger

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// TestDecoderRoundTrip reads back what the Append functions wrote.
func TestDecoderRoundTrip(t *testing.T) {
	var b []byte
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -7)
	b = AppendString(b, "héllo")
	b = AppendString(b, "")
	b = AppendFloat(b, math.Pi)
	b = AppendBool(b, true)
	b = binary.AppendUvarint(b, 2)
	b = append(b, 'x', 'y')
	d := NewDecoder(b)
	if got := d.Uvarint(); got != 300 {
		t.Errorf("Uvarint = %d", got)
	}
	if got := d.Int(); got != -7 {
		t.Errorf("Int = %d", got)
	}
	if got := d.Str(); got != "héllo" {
		t.Errorf("Str = %q", got)
	}
	if got := d.Str(); got != "" {
		t.Errorf("empty Str = %q", got)
	}
	if got := d.Float(); got != math.Pi {
		t.Errorf("Float = %v", got)
	}
	if !d.Bool() {
		t.Error("Bool = false")
	}
	if n := d.Count(); n != 2 || string(d.Bytes(n)) != "xy" {
		t.Errorf("Count/Bytes = %d", n)
	}
	if err := d.Done(); err != nil {
		t.Errorf("Done = %v", err)
	}
}

// TestDecoderErrors: a short or malformed payload sets Err (wrapping
// ErrCacheInvalid) on the first bad read, and every later read returns a
// zero value instead of panicking.
func TestDecoderErrors(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		read    func(d *Decoder)
	}{
		{"empty uvarint", nil, func(d *Decoder) { d.Uvarint() }},
		{"unterminated varint", []byte{0x80, 0x80}, func(d *Decoder) { d.Varint() }},
		{"string longer than payload", AppendString(nil, "abc")[:3], func(d *Decoder) { d.Str() }},
		{"short float", []byte{1, 2, 3}, func(d *Decoder) { d.Float() }},
		{"count beyond payload", binary.AppendUvarint(nil, 1000), func(d *Decoder) { d.Count() }},
		{"negative bytes", []byte{1}, func(d *Decoder) { d.Bytes(-1) }},
		{"empty bool", nil, func(d *Decoder) { d.Bool() }},
		{"trailing bytes", []byte{1, 2}, func(d *Decoder) { d.Byte(); d.Done() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.payload)
			tc.read(d)
			if !errors.Is(d.Err(), ErrCacheInvalid) {
				t.Fatalf("Err = %v, want ErrCacheInvalid", d.Err())
			}
			if d.Str() != "" || d.Uvarint() != 0 || d.Float() != 0 || d.Bytes(1) != nil || d.Count() != 0 {
				t.Error("reads after an error return non-zero values")
			}
		})
	}
}
