package testtier

import (
	"flag"
	"strconv"
)

// Parallel is for a TestMain whose tests mostly wait on the processes and
// timers they start, not on the CPU: unless the command line set
// -test.parallel (go test -parallel), it sets it to n instead of Go's
// default, GOMAXPROCS, which on a small machine leaves the cores idle.
// Under -fuzz, where -parallel counts the fuzzing processes, it leaves the
// default. Call it before m.Run; it parses the command line.
func Parallel(n int) {
	flag.Parse()
	if err := parallel(flag.CommandLine, n); err != nil {
		panic(err)
	}
}

// parallel sets fs's test.parallel to n unless it was set or test.fuzz
// was.
func parallel(fs *flag.FlagSet, n int) error {
	set := false
	fs.Visit(func(f *flag.Flag) {
		set = set || f.Name == "test.parallel" || f.Name == "test.fuzz" && f.Value.String() != ""
	})
	if set {
		return nil
	}
	return fs.Set("test.parallel", strconv.Itoa(n))
}
