//go:build !amd64 && !arm64

package main

const (
	sysKeyctl      = -1
	sysBPF         = -1
	sysUserfaultfd = -1
	sysSetns       = -1
)
