package ledger

import (
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// Config configures a Log.
type Config struct {
	// VerifierKey is the note verifier key of the log's checkpoints. When set,
	// the stored checkpoint's signature is checked on Open and every checkpoint
	// given to SetCheckpoint must verify with it. When empty, checkpoints are
	// still checked against the tree, but not their signatures.
	VerifierKey string

	// TailCheck is how many of the newest leaves Open rehashes and compares
	// with their stored hashes (0: none). It bounds start-up work: the rest of the tree
	// is checked along the root path against the stored checkpoint, and
	// completely only by Scrub or FullCheck.
	TailCheck int

	// FullCheck makes Open run Scrub: every leaf and every stored hash is
	// recomputed. Proportional to the size of the log.
	FullCheck bool
}

// DefaultConfig returns the configuration a server uses: check the newest
// 4096 leaves on open, no full scrub.
func DefaultConfig() Config { return Config{TailCheck: 4096} }

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.TailCheck < 0 {
		return fmt.Errorf("ledger: Config.TailCheck is %d, want ≥ 0", c.TailCheck)
	}
	if c.VerifierKey != "" {
		if _, err := NewVerifier(c.VerifierKey); err != nil {
			return err
		}
	}
	return nil
}

// verifier returns the configured verifier, or nil when there is none.
func (c Config) verifier() note.Verifier {
	if c.VerifierKey == "" {
		return nil
	}
	v, _ := NewVerifier(c.VerifierKey) // Validate has parsed it already
	return v
}
