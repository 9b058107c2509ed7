package policy

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"slices"

	cedar "github.com/cedar-policy/cedar-go"
)

// MaxTextBytes bounds the policy text Parse accepts.
const MaxTextBytes = 1 << 20

// Set is a parsed, checked Cedar policy set. It is immutable and safe for
// concurrent use by any number of goroutines.
type Set struct {
	text     string
	hash     string
	policies ordered
	approval map[cedar.PolicyID]int // the approvers a permit requires
}

// ordered is the set's policies sorted by id: what cedar.Authorize walks.
// A slice walks in the same order every time, unlike cedar-go's map.
type ordered []named

type named struct {
	id cedar.PolicyID
	p  *cedar.Policy
}

// Parse parses Cedar policy text. Every policy MUST carry an @id("…")
// annotation, unique in the set and 1-128 characters of [A-Za-z0-9._:-], so
// that decisions and receipts can name it; @approval, when present, MUST be
// @approval("required") on a permit policy. Other annotations are kept and
// ignored. A policy may read only the attributes and context members of the
// entity model. Empty text is a valid set that denies everything.
//
// Errors are ErrTextTooLarge; ErrTooNested (past MaxNesting, with a
// position); ErrSyntax, wrapping the Cedar parser's message, which gives line
// and column; or a *PolicyError, giving where the policy starts and wrapping
// ErrMissingID, ErrBadID, ErrDuplicateID, ErrBadApproval or
// ErrUnknownAttribute.
func Parse(src []byte) (*Set, error) {
	if len(src) > MaxTextBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTextTooLarge, len(src), MaxTextBytes)
	}
	if err := checkNesting(src); err != nil {
		return nil, err
	}
	list, err := cedar.NewPolicyListFromBytes("", src)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	sum := sha256.Sum256(src)
	s := &Set{
		text:     string(src),
		hash:     "sha256:" + hex.EncodeToString(sum[:]),
		policies: make(ordered, 0, len(list)),
		approval: map[cedar.PolicyID]int{},
	}
	seen := map[cedar.PolicyID]bool{}
	for _, p := range list {
		id, approvers, err := checkAnnotations(p)
		if err != nil {
			return nil, err
		}
		if err := checkAttributes(p, string(id)); err != nil {
			return nil, err
		}
		if seen[id] {
			return nil, policyError(p, string(id), ErrDuplicateID)
		}
		seen[id] = true
		s.policies = append(s.policies, named{id, p})
		if approvers > 0 {
			s.approval[id] = approvers
		}
	}
	slices.SortFunc(s.policies, func(a, b named) int { return cmp.Compare(a.id, b.id) })
	return s, nil
}

// Hash is "sha256:" + hex of the exact policy text Parse was given. It is
// stable for the same bytes and changes with any edit, reformatting and
// comments included: an auditor holding the text reproduces it with
// sha256sum, and no Cedar formatter version can ever change it.
func (s *Set) Hash() string { return s.hash }

// Text is the policy text exactly as given to Parse.
func (s *Set) Text() string { return s.text }

// IDs lists the policy ids, sorted.
func (s *Set) IDs() []string {
	ids := make([]string, len(s.policies))
	for i, n := range s.policies {
		ids[i] = string(n.id)
	}
	return ids
}

// All implements cedar.PolicyIterator.
func (o ordered) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] {
	return func(yield func(cedar.PolicyID, *cedar.Policy) bool) {
		for _, n := range o {
			if !yield(n.id, n.p) {
				return
			}
		}
	}
}
