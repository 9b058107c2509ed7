package ledger

import (
	"errors"
	"fmt"
	"math"

	"github.com/writhq/writ/protocol"
)

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
func (c Checkpoint) Text() []byte { return c.body().Marshal() }

func (c Checkpoint) body() protocol.Checkpoint {
	return protocol.Checkpoint{Origin: c.Origin, Size: uint64(c.Size), Root: c.Root, Extensions: c.Extensions}
}

// String returns the body as text.
func (c Checkpoint) String() string { return string(c.Text()) }

// ParseCheckpoint parses a checkpoint body (the note text, without the
// signature block) with the protocol package's strict parser, and refuses a
// size beyond what the ledger can index. Every failure wraps
// ErrMalformedCheckpoint.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	pc, err := protocol.ParseCheckpoint(text)
	if err != nil {
		msg := err.Error()
		var pe *protocol.Error
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		return Checkpoint{}, fmt.Errorf("%w: %s", ErrMalformedCheckpoint, msg)
	}
	if pc.Size > math.MaxInt64 {
		return Checkpoint{}, fmt.Errorf("%w: tree size %d out of range", ErrMalformedCheckpoint, pc.Size)
	}
	return Checkpoint{Origin: pc.Origin, Size: int64(pc.Size), Root: Hash(pc.Root), Extensions: pc.Extensions}, nil
}
