package tools

import (
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// The message of a schema failure goes into the intent's answer and its
// receipt, which must never carry params in the clear: it names where in the
// params each failure is and which keyword failed, and quotes only what
// comes from the schema or the shape of the params (required property
// names, types, property names that are not allowed), never a value.
const (
	maxSchemaFailures = 5
	maxSchemaMessage  = 512
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
	if len(msg) > maxSchemaMessage {
		msg = msg[:maxSchemaMessage-3] + "..."
	}
	return msg
}

// failure is the keyword that failed, with its detail only where the detail
// holds no value of the params.
func failure(k jsonschema.ErrorKind) string {
	switch k.(type) {
	case *kind.Required, *kind.Type, *kind.AdditionalProperties, *kind.FalseSchema:
		return k.LocalizedString(printer)
	}
	path := k.KeywordPath()
	if len(path) == 0 {
		return "does not fit"
	}
	return path[len(path)-1] + " not satisfied"
}

// pointer is a JSON pointer to a place in the params ("/" for the whole).
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}
