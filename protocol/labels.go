package protocol

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// MaxLabels is the most labels a node may have.
const MaxLabels = 64

// ErrLabels marks labels that break CheckLabels's rules.
var ErrLabels = errors.New("invalid labels")

// CheckLabels checks a node's labels: at most MaxLabels; keys of 1 to 128
// characters of A-Z a-z 0-9 . _ / -; values of at most 256 bytes with no
// control characters.
func CheckLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%w: %d labels, at most %d", ErrLabels, len(labels), MaxLabels)
	}
	for k, v := range labels {
		if !labelKey(k) || len(v) > 256 || strings.ContainsFunc(v, unicode.IsControl) {
			return fmt.Errorf("%w: label %.140q: keys are 1-128 of A-Z a-z 0-9 . _ / -, values at most 256 bytes without control characters", ErrLabels, k)
		}
	}
	return nil
}

func labelKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._/-", c)) {
			return false
		}
	}
	return true
}
