package seccomp

import "golang.org/x/sys/unix"

// archCases are the verdicts only amd64 has.
func archCases(arch uint32) []verdictCase {
	return []verdictCase{
		{"aarch64 getpid", call{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_AARCH64}, kill},
		// x32 shares AUDIT_ARCH_X86_64 and sets bit 30 of the number.
		{"x32 getpid", call{nr: 0x40000000 | unix.SYS_GETPID, arch: arch}, kill},
		{"x32 number past the table", call{nr: 0x7fffffff, arch: arch}, kill},
		{"iopl", call{nr: unix.SYS_IOPL, arch: arch}, errEPERM},
	}
}
