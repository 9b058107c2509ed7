// Command witness is the agent tests' tool that testifies how often it ran.
// It reads its params, {"file": PATH, "wait_for": PATH?}, from stdin,
// appends one line to file (so the test counts runs, across crashes and
// restarts of the agent), then, if wait_for is set, waits until that file
// exists (at most 20 s) and writes its params back on stdout.
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-json-experiment/json"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read stdin: %v", err)
	}
	var p struct {
		File    string `json:"file"`
		WaitFor string `json:"wait_for"`
	}
	if err := json.Unmarshal(in, &p); err != nil || p.File == "" {
		fail("params must be {\"file\": PATH}: %v", err)
	}
	f, err := os.OpenFile(p.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail("open witness file: %v", err)
	}
	if _, err := fmt.Fprintf(f, "ran %d\n", os.Getpid()); err != nil {
		fail("write witness file: %v", err)
	}
	f.Close()
	for deadline := time.Now().Add(20 * time.Second); p.WaitFor != "" && time.Now().Before(deadline); {
		if _, err := os.Stat(p.WaitFor); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	os.Stdout.Write(in)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "witness: "+format+"\n", args...)
	os.Exit(2)
}
