package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckLabels(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for name, tc := range map[string]struct {
		labels map[string]string
		ok     bool
	}{
		"none":          {nil, true},
		"plain":         {map[string]string{"zone": "eu-1", "k8s.io/arch": "amd64"}, true},
		"empty key":     {map[string]string{"": "x"}, false},
		"space in key":  {map[string]string{"a b": "x"}, false},
		"long key":      {map[string]string{strings.Repeat("k", 129): "x"}, false},
		"long value":    {map[string]string{"k": strings.Repeat("v", 257)}, false},
		"control value": {map[string]string{"k": "a\nb"}, false},
		"too many":      {many, false},
	} {
		err := CheckLabels(tc.labels)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrLabels)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
