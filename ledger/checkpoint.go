package ledger

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxCheckpointSize bounds the body we parse; real checkpoints are ~100 bytes.
const maxCheckpointSize = 1 << 16

// Checkpoint is the body of a C2SP tlog-checkpoint: the log's origin, the
// tree size and the root hash, plus optional extension lines. On its own it
// proves nothing; it is only trusted inside a signed note (see SignCheckpoint
// and OpenCheckpoint).
type Checkpoint struct {
	Origin     string   // the log's identity; equals the signing key's name
	Size       int64    // number of leaves the tree commits to
	Root       Hash     // RFC 6962 root of the first Size leaves
	Extensions []string // optional lines after the root, kept verbatim
}

// Text returns the checkpoint body: origin, size and root on their own lines,
// then any extension lines, each ending in a newline.
func (c Checkpoint) Text() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d\n%s\n", c.Origin, c.Size, c.Root)
	for _, e := range c.Extensions {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// String returns the body as text.
func (c Checkpoint) String() string { return string(c.Text()) }

// ParseCheckpoint parses a checkpoint body (the note text, without the
// signature block). It is strict: the size is canonical decimal, the root is
// padded standard base64, no line is empty and the body ends in a newline.
// Every failure wraps ErrMalformedCheckpoint.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	var c Checkpoint
	bad := func(format string, args ...any) (Checkpoint, error) {
		return Checkpoint{}, fmt.Errorf("%w: %s", ErrMalformedCheckpoint, fmt.Sprintf(format, args...))
	}
	if len(text) > maxCheckpointSize {
		return bad("%d bytes, at most %d", len(text), maxCheckpointSize)
	}
	if len(text) == 0 || text[len(text)-1] != '\n' {
		return bad("body does not end in a newline")
	}
	lines := strings.Split(string(text[:len(text)-1]), "\n")
	if len(lines) < 3 {
		return bad("%d lines, want origin, size and root", len(lines))
	}
	for i, l := range lines {
		if l == "" {
			return bad("line %d is empty", i+1)
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return bad("line %d has a control character", i+1)
		}
	}
	c.Origin = lines[0]
	size, err := parseSize(lines[1])
	if err != nil {
		return bad("tree size %q: %v", lines[1], err)
	}
	c.Size = size
	if c.Root, err = ParseHash(lines[2]); err != nil {
		return bad("root: %v", err)
	}
	if len(lines) > 3 {
		c.Extensions = lines[3:]
	}
	return c, nil
}

// parseSize accepts canonical decimal only: no sign, no leading zeros.
func parseSize(s string) (int64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a canonical decimal")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("out of range")
	}
	return int64(n), nil
}
