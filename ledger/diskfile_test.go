package ledger

import (
	"bytes"
	"testing"
)

func FuzzParseHead(f *testing.F) {
	f.Add(formatHead(0))
	f.Add(formatHead(12345))
	f.Add([]byte(headMagic + "\n-1\n"))
	f.Add([]byte(headMagic + "\n-000000000000000001\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		size, err := parseHead(data)
		if err != nil {
			return
		}
		if got := formatHead(size); !bytes.Equal(got, data) {
			t.Errorf("head does not print back: got %q, want %q", got, data)
		}
	})
}
