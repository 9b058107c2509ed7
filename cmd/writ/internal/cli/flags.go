package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
)

// clockFlag is --now: a fixed RFC 3339 time, or the system clock when empty.
type clockFlag struct{ value string }

func (c *clockFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.value, "now", "", "the time to verify or sign at, RFC 3339 (default: the clock)")
}

func (c *clockFlag) now(e *env) (time.Time, error) {
	if c.value == "" {
		return e.now(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, c.value)
	if err != nil {
		return time.Time{}, fmt.Errorf("--now %q is not an RFC 3339 time", c.value)
	}
	return t, nil
}

// readInput reads one object from r, refusing more than limit bytes.
func readInput(r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	// A body over the limit is returned as read, one byte over, so that the
	// protocol rejects it with its own code.
	return b, nil
}

// randomID returns prefix followed by 16 random bytes in hex.
func randomID(prefix string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + hex.EncodeToString(b)
}

// verdict is the one JSON line a verify command prints.
type verdict struct {
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
}

// report prints a verification outcome and turns an invalid one into exit 1.
func (e *env) report(err error) error {
	if err == nil {
		if e.output == "text" {
			fmt.Fprintln(e.out, "valid")
			return nil
		}
		return e.printJSON(verdict{Valid: true})
	}
	code := protocol.CodeOf(err)
	if code == "" {
		return err
	}
	if e.output == "text" {
		fmt.Fprintf(e.out, "invalid: %v\n", err)
	} else {
		if err := e.printJSON(verdict{Error: string(code)}); err != nil {
			return err
		}
		fmt.Fprintf(e.err, "writ: invalid: %v\n", err)
	}
	return exitError{1}
}

// printObject prints a signed object: canonical JSON, or indented for -o text.
func (e *env) printObject(v any) error {
	b, err := marshalCanonical(v)
	if err != nil {
		return err
	}
	if e.output == "text" {
		b, err = indent(b)
		if err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(e.out, "%s\n", b)
	return err
}
