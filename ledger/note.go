package ledger

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// SignCheckpoint returns c as a signed note. The signer's name must be the
// checkpoint's origin, so that verifiers can find the log by its key.
func SignCheckpoint(c Checkpoint, s note.Signer) ([]byte, error) {
	if s.Name() != c.Origin {
		return nil, fmt.Errorf("%w: signer %q cannot sign for origin %q", ErrWrongOrigin, s.Name(), c.Origin)
	}
	if _, err := ParseCheckpoint(c.Text()); err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: string(c.Text())}, s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedCheckpoint, err)
	}
	return msg, nil
}

// OpenCheckpoint checks the signed note msg with v and returns the checkpoint
// it carries. It fails with ErrUnknownKey if v did not sign it, ErrBadSignature
// if v's signature does not match the text, ErrMalformedCheckpoint if the note
// or body cannot be parsed, and ErrWrongOrigin if the body names another log.
// Signatures by other keys are ignored.
func OpenCheckpoint(msg []byte, v note.Verifier) (Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return Checkpoint{}, fmt.Errorf("%w %s", ErrUnknownKey, v.Name())
		case errors.As(err, &invalid):
			return Checkpoint{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
		default:
			return Checkpoint{}, fmt.Errorf("%w: note: %v", ErrMalformedCheckpoint, err)
		}
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return Checkpoint{}, err
	}
	if c.Origin != v.Name() {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint is for %q, key is for %q", ErrWrongOrigin, c.Origin, v.Name())
	}
	return c, nil
}
