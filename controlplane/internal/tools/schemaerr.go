package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// The message of a schema failure goes into the intent's answer and its
// receipt, which must never carry params in the clear: it names where in the
// params each failure is (a JSON pointer, whose steps are the params' keys)
// and which keyword failed, and quotes only what comes from the schema
// (required property names, types), never a value.
const (
	maxSchemaFailures = 5
	maxSchemaMessage  = 512
	maxSchemaStep     = 64
)

var printer = message.NewPrinter(message.MatchLanguage("en"))

// schemaFailure describes a validation error without the params' values.
func schemaFailure(ve *jsonschema.ValidationError) string {
	var parts []string
	more := 0
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if len(parts) == maxSchemaFailures {
			more++
			return
		}
		parts = append(parts, "at "+pointer(e.InstanceLocation)+": "+failure(e.ErrorKind))
	}
	walk(ve)
	msg := "params do not fit the tool's input schema: " + strings.Join(parts, "; ")
	if more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return truncate(msg, maxSchemaMessage)
}

// failure is the keyword that failed, with its detail only where the detail
// holds no value of the params.
func failure(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Required, *kind.Type, *kind.FalseSchema:
		return k.LocalizedString(printer)
	case *kind.AdditionalProperties:
		return fmt.Sprintf("%d properties the schema does not allow", len(k.Properties))
	}
	path := k.KeywordPath()
	if len(path) == 0 {
		return "does not fit"
	}
	return path[len(path)-1] + " not satisfied"
}

// pointer is a JSON pointer to a place in the params ("/" for the whole),
// each step at most maxSchemaStep bytes.
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(truncate(strings.NewReplacer("~", "~0", "/", "~1").Replace(s), maxSchemaStep))
	}
	return b.String()
}

// truncate cuts s to at most n bytes at a character boundary, marking the
// cut with "...": the message must stay UTF-8, or the admission that records
// it could not be proposed.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - 3
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strings.ToValidUTF8(s[:i], "") + "..."
}
