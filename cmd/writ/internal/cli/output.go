package cli

import (
	"encoding/json"
	"fmt"
)

// printJSON writes v as one line of JSON.
func (e *env) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.out, "%s\n", b)
	return err
}
