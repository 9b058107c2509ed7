//go:build !linux || (!amd64 && !arm64)

package seccomp

var table syscallTable
