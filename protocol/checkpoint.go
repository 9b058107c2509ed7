package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Checkpoint is the body of a C2SP tlog-checkpoint: the log's origin, its size,
// and the RFC 6962 root hash of its first Size leaves. The body is signed as a C2SP
// signed note by the ledger package; this type only reads and writes the text.
type Checkpoint struct {
	Origin     string
	Size       uint64
	Root       [sha256.Size]byte
	Extensions []string
}

// MaxCheckpointBytes bounds a checkpoint body; real ones are about 100 bytes.
const MaxCheckpointBytes = 1 << 16

// Marshal returns the checkpoint body: origin, size and base64 root, one per
// line, then any extension lines, each ending in a newline.
func (c Checkpoint) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(c.Origin)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatUint(c.Size, 10))
	b.WriteByte('\n')
	b.WriteString(base64.StdEncoding.EncodeToString(c.Root[:]))
	b.WriteByte('\n')
	for _, e := range c.Extensions {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ParseCheckpoint parses a checkpoint body strictly: a non-empty origin, a
// decimal size without sign or leading zeros, the padded standard base64 of a
// 32-byte root, optional extension lines; no line empty or holding a control
// character, every line ending in a newline. The ledger package reads
// checkpoints with it.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	var c Checkpoint
	if len(text) > MaxCheckpointBytes || !utf8.Valid(text) {
		return c, malformed("checkpoint is too long or not UTF-8")
	}
	if len(text) == 0 || text[len(text)-1] != '\n' {
		return c, malformed("checkpoint must end with a newline")
	}
	lines := strings.Split(string(text[:len(text)-1]), "\n")
	if len(lines) < 3 {
		return c, malformed("checkpoint needs origin, size and root lines")
	}
	for i, l := range lines {
		if l == "" {
			return c, malformed("checkpoint line %d is empty", i+1)
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return c, malformed("checkpoint line %d has a control character", i+1)
		}
	}
	c.Origin = lines[0]
	n, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || (len(lines[1]) > 1 && lines[1][0] == '0') {
		return c, malformed("checkpoint size %.40q is not a decimal number", lines[1])
	}
	c.Size = n
	root, err := strictBase64.DecodeString(lines[2])
	if err != nil || len(root) != sha256.Size {
		return c, malformed("checkpoint root is not the base64 of 32 bytes")
	}
	copy(c.Root[:], root)
	if len(lines) > 3 {
		c.Extensions = lines[3:]
	}
	return c, nil
}
