package main

const (
	sysKeyctl      = 250
	sysBPF         = 321
	sysUserfaultfd = 323
	sysSetns       = 308
)
