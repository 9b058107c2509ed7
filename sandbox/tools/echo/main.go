// Command echo is the tool `writ dev` ships: a WASI module (built with
// GOOS=wasip1 GOARCH=wasm) that writes its parameters, the JSON object it
// reads on stdin, back on stdout unchanged. Built with
// -buildmode=c-shared it is a prepared tool: a reactor exporting writ_run,
// which the wasm tier starts from the image of its initialized runtime
// (docs/tools.md); built as a command, its main runs the same function.
package main

import (
	"io"
	"os"
)

//go:wasmexport writ_run
func run() int32 {
	if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
		os.Stderr.WriteString("echo: " + err.Error() + "\n")
		return 1
	}
	return 0
}

func main() { os.Exit(int(run())) }
