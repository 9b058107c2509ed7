// Command echo is the tool `writ dev` ships: a WASI module (built with
// GOOS=wasip1 GOARCH=wasm) that writes its parameters, the JSON object it
// reads on stdin, back on stdout unchanged.
package main

import (
	"io"
	"os"
)

func main() {
	if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
		os.Stderr.WriteString("echo: " + err.Error() + "\n")
		os.Exit(1)
	}
}
