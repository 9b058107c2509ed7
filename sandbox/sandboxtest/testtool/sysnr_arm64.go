package main

const (
	sysKeyctl      = 219
	sysBPF         = 280
	sysUserfaultfd = 282
	sysSetns       = 268
)
