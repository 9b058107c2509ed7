// Command goempty does nothing: a Go WASI module whose run is the Go
// runtime's own start and exit, measured by BenchmarkGoEmpty beside the
// Go echo tool.
package main

func main() {}
