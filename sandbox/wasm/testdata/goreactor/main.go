// Command goreactor is a prepared tool (built with -buildmode=c-shared, it
// exports writ_run) whose output shows what its run starts from: how many
// times its package init ran in this instance, how many runs this instance
// made, state its init built, the environment and arguments it read while
// starting, and fresh random bytes. Its parameters pick an ending: "exit"
// calls os.Exit(3), "return" returns 4, "panic" panics, "write" writes
// them to /out.txt.
package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
)

var (
	inits, runs int
	table       = map[string]int{}
	envAtInit   = os.Getenv("WRIT_TEST_ENV")
	argsAtInit  = strings.Join(os.Args, " ")
)

func init() {
	inits++
	for i := range 1000 {
		table[fmt.Sprint(i)] = i
	}
	os.Stderr.WriteString("initializing\n")
}

//go:wasmexport writ_run
func run() int32 {
	runs++
	in, _ := io.ReadAll(os.Stdin)
	params := string(in)
	switch {
	case strings.Contains(params, `"exit"`):
		os.Exit(3)
	case strings.Contains(params, `"return"`):
		return 4
	case strings.Contains(params, `"panic"`):
		panic("asked to")
	case strings.Contains(params, `"write"`):
		if err := os.WriteFile("/out.txt", in, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	r := make([]byte, 8)
	rand.Read(r)
	fmt.Printf("inits=%d runs=%d table=%d env=%s args=%s env-now=%s rand=%x params=%s",
		inits, runs, table["999"], envAtInit, argsAtInit, os.Getenv("WRIT_TEST_ENV"), r, params)
	return 0
}

// main runs it once when built as a command.
func main() { os.Exit(int(run())) }
