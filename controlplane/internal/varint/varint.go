// Package varint reads and writes the varints of the control plane's binary
// formats (group and admit log entries, forwarded submission batches) in
// their shortest form only, so that each value has one encoding.
package varint

import "encoding/binary"

// Uvarint reads an unsigned varint in its shortest form; n <= 0 means there
// is none (too short, overflowing, or longer than the shortest form).
func Uvarint(b []byte) (v uint64, n int) {
	v, n = binary.Uvarint(b)
	if n > 1 && b[n-1] == 0 { // a longer form ends in a byte of no bits
		return 0, -1
	}
	return v, n
}

// Varint reads a signed varint in its shortest form, as Uvarint.
func Varint(b []byte) (v int64, n int) {
	v, n = binary.Varint(b)
	if n > 1 && b[n-1] == 0 {
		return 0, -1
	}
	return v, n
}

// AppendBytes appends s with its length before it, as an unsigned varint.
func AppendBytes[S ~[]byte | ~string](b []byte, s S) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
