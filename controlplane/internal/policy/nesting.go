package policy

import "fmt"

// Limits on how deeply policy text may nest. cedar-go parses and evaluates
// recursively, and a goroutine that outgrows its stack is a fatal error, not
// a panic: a megabyte of "(((…" would crash the server. Real policies nest a
// handful of levels.
const (
	// MaxNesting bounds open brackets — ( [ { — and if-then-else
	// expressions at any point of the text.
	MaxNesting = 128
	// maxUnary bounds a run of ! and - operators. Cedar's grammar allows
	// four unary operators in a row; a binary minus may precede them.
	maxUnary = 8
)

// checkNesting scans Cedar text lexically, skipping string literals and
// comments, and refuses it before the parser can recurse too deeply. It is
// only a bound, never a parse: whatever it accepts, the parser still judges.
func checkNesting(src []byte) error {
	depth, unary := 0, 0
	line, col := 1, 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c != '!' && c != '-' && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			unary = 0
		}
		switch {
		case c == '\n':
			line, col = line+1, 0
		case c == '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
				if i < len(src) && src[i] == '\n' {
					line, col = line+1, 0
				}
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i-- // let the newline be counted
		case c == '!' || c == '-':
			if unary++; unary > maxUnary {
				return nestingError(line, col, "more than %d ! or - in a row", maxUnary)
			}
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			switch string(src[i:j]) {
			case "if":
				depth++
			case "else":
				depth--
			}
			col += j - i - 1
			i = j - 1
		}
		if depth > MaxNesting {
			return nestingError(line, col, "nested more than %d deep", MaxNesting)
		}
	}
	return nil
}

func nestingError(line, col int, format string, args ...any) error {
	return fmt.Errorf("%w: line %d, column %d: %s", ErrTooNested, line, col, fmt.Sprintf(format, args...))
}

func isIdentStart(c byte) bool { return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
func isIdentByte(c byte) bool  { return isIdentStart(c) || ('0' <= c && c <= '9') }
