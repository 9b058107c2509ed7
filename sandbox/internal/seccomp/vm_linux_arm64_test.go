package seccomp

import "golang.org/x/sys/unix"

// archCases are the verdicts only arm64 has.
func archCases(uint32) []verdictCase {
	return []verdictCase{
		{"x86_64 getpid", call{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_X86_64}, kill},
	}
}
