package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
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

// The output contract: every command prints JSON by default, and either has
// a text form for -o text (textOutput marks it) or refuses -o text before it
// does anything, so the flag is never silently ignored.
const (
	outputAnnotation = "writ-output"
	outputText       = "text"
)

// textOutput marks commands that honour -o text.
func textOutput(cmds ...*cobra.Command) {
	for _, c := range cmds {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[outputAnnotation] = outputText
	}
}

// checkOutput refuses -o text for a command that has no text form.
func (e *env) checkOutput(cmd *cobra.Command) error {
	switch {
	case e.output != "json" && e.output != "text":
		return fmt.Errorf("--output must be json or text, not %q", e.output)
	case e.output == "text" && cmd.Annotations[outputAnnotation] != outputText:
		return fmt.Errorf("%s prints JSON only: leave out -o text (or pipe the JSON through jq)", cmd.CommandPath())
	}
	return nil
}

// printList prints an admin listing ({"NAME": [objects]}): as the server
// answers it, or with -o text one table, a column per field (id first), a
// nested value as compact JSON.
func (e *env) printList(raw json.RawMessage) error {
	var v map[string][]map[string]any
	if e.output != "text" || json.Unmarshal(raw, &v) != nil || len(v) != 1 {
		var any any
		if err := json.Unmarshal(raw, &any); err != nil {
			return err
		}
		return e.printJSON(any)
	}
	var rows []map[string]any
	for _, r := range v {
		rows = r
	}
	cols := map[string]bool{}
	for _, r := range rows {
		for k := range r {
			cols[k] = true
		}
	}
	names := slices.Sorted(maps.Keys(cols))
	if cols["id"] {
		names = append([]string{"id"}, slices.DeleteFunc(names, func(s string) bool { return s == "id" })...)
	}
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	for i, n := range names {
		fmt.Fprint(tw, sep(i), upper(n))
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for i, n := range names {
			fmt.Fprint(tw, sep(i), cell(textValue(r[n])))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func sep(i int) string {
	if i == 0 {
		return ""
	}
	return "\t"
}

// upper is a column heading: the field name in capitals, _ as a space.
func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '_':
			b[i] = ' '
		}
	}
	return string(b)
}

// textValue is a table cell's text: a string as it is, nothing as "", any
// other value as compact JSON.
func textValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
