package cli

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/writhq/writ/internal/secretfile"
)

// maxKeyFile bounds what is read as a key file; real ones are under 100 bytes.
const maxKeyFile = 4096

// readKeyFile reads a key file: one line of standard base64.
func readKeyFile(path string) ([]byte, error) {
	b, err := readSmallFile(path, maxKeyFile)
	if err != nil {
		return nil, err
	}
	line := bytes.TrimRight(b, "\r\n")
	if bytes.ContainsAny(line, "\r\n") {
		return nil, fmt.Errorf("key file %s: must hold one line of base64", path)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(string(line))
	if err != nil {
		return nil, fmt.Errorf("key file %s: not standard base64", path)
	}
	return key, nil
}

// readSmallFile reads at most limit bytes, and refuses larger files.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, 512)
	buf := bytes.NewBuffer(b)
	n, err := buf.ReadFrom(&limitedReader{f, limit + 1})
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return buf.Bytes(), nil
}

type limitedReader struct {
	f interface{ Read([]byte) (int, error) }
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// writeKeyFile writes a key file with mode perm, whole or not at all and
// never through a symbolic link (secretfile); it never replaces an existing
// file unless force is set.
func writeKeyFile(path string, data []byte, perm os.FileMode, force bool) error {
	if force {
		return secretfile.WriteMode(path, data, perm)
	}
	err := secretfile.CreateMode(path, data, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; use --force to replace it", path)
	}
	return err
}

// keyRef is an ID=VALUE pair from a flag such as --key orch-1=orch-1.key.
type keyRef struct{ id, value string }

func parseKeyRef(flag, s string) (keyRef, error) {
	id, value, ok := strings.Cut(s, "=")
	if !ok || id == "" || value == "" {
		return keyRef{}, fmt.Errorf("--%s %q: want ID=VALUE", flag, s)
	}
	return keyRef{id, value}, nil
}
