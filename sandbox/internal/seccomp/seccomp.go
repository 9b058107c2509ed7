// Package seccomp builds, in pure Go, the classic-BPF seccomp program the
// bwrap tier hands to bubblewrap (--seccomp FD) and the process tier
// installs on the thread that starts a tool (InstallThread): default allow, EPERM for
// the system calls a tool has no use for and an escape has — mounts and
// namespaces (unshare, setns, clone with any CLONE_NEW* flag), tracing, BPF and
// perf, keyrings, kexec and modules, userfaultfd, handle-based opens,
// ioctl(TIOCSTI) — ENOSYS for clone3 (its flags sit behind a pointer
// seccomp cannot read, so libc falls back to clone), and death for a call
// from another architecture's ABI (x32 on amd64 included).
//
// No library was taken for this: libseccomp needs cgo, and the pure-Go
// builders found were unmaintained; the program is small enough to read.
package seccomp

import (
	"encoding/binary"
	"errors"
)

// BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
const (
	ldAbs    = 0x20 // BPF_LD | BPF_W | BPF_ABS
	jeqK     = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	jgeK     = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	andK     = 0x54 // BPF_ALU | BPF_AND | BPF_K
	retK     = 0x06 // BPF_RET | BPF_K
	retAllow = 0x7fff0000
	retKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno = 0x00050000
	ePERM    = 1
	eNOSYS   = 38

	offNr   = 0  // seccomp_data.nr
	offArch = 4  // seccomp_data.arch
	offArg0 = 16 // low half of args[0] (little endian)
	offArg1 = 24 // low half of args[1]

	// cloneNamespaces are clone's new-namespace flags: NEWNS, NEWCGROUP,
	// NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
	cloneNamespaces = 0x7e020000
	tiocsti         = 0x5412
	ptraceTraceMe   = 0
	ptraceDetach    = 17
)

// ErrUnsupported means there is no syscall table for this architecture.
var ErrUnsupported = errors.New("seccomp: no filter for this architecture")

// Instruction is one struct sock_filter.
type Instruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// Program returns the filter for the architecture the agent was built for.
func Program() ([]Instruction, error) { return program(false) }

// ProgramTraced is Program for a tool the agent starts itself, holding it
// at its exec with ptrace (the process tier): the filter is installed on the
// agent's thread that starts the tool, which inherits it, and that thread
// and the tool's child half need ptrace(PTRACE_TRACEME) and
// ptrace(PTRACE_DETACH); every other ptrace request still fails. A tool
// that makes itself traced is traced by the agent, which lets it go.
func ProgramTraced() ([]Instruction, error) { return program(true) }

func program(traced bool) ([]Instruction, error) {
	if table.arch == 0 {
		return nil, ErrUnsupported
	}
	p := []Instruction{
		{Code: ldAbs, K: offArch},
		{Code: jeqK, Jt: 1, K: table.arch},
		{Code: retK, K: retKill},
		{Code: ldAbs, K: offNr},
	}
	if table.x32 {
		p = append(p, Instruction{Code: jgeK, Jf: 1, K: 0x40000000}, Instruction{Code: retK, K: retKill})
	}
	if traced {
		p = append(p,
			Instruction{Code: jeqK, Jf: 4, K: table.ptrace},
			Instruction{Code: ldAbs, K: offArg0},
			Instruction{Code: jeqK, Jt: 1, K: ptraceTraceMe},
			Instruction{Code: jeqK, Jf: 1, K: ptraceDetach},
			Instruction{Code: retK, K: retAllow},
			Instruction{Code: ldAbs, K: offNr},
		)
	}
	for _, nr := range table.denied {
		p = append(p, Instruction{Code: jeqK, Jf: 1, K: nr}, Instruction{Code: retK, K: retErrno | ePERM})
	}
	p = append(p,
		Instruction{Code: jeqK, Jf: 1, K: table.clone3}, Instruction{Code: retK, K: retErrno | eNOSYS},
		// clone(flags & any CLONE_NEW*)
		Instruction{Code: jeqK, Jf: 4, K: table.clone},
		Instruction{Code: ldAbs, K: offArg0},
		Instruction{Code: andK, K: cloneNamespaces},
		Instruction{Code: jeqK, Jt: 1, K: 0},
		Instruction{Code: retK, K: retErrno | ePERM},
		// ioctl(fd, TIOCSTI)
		Instruction{Code: ldAbs, K: offNr},
		Instruction{Code: jeqK, Jf: 3, K: table.ioctl},
		Instruction{Code: ldAbs, K: offArg1},
		Instruction{Code: jeqK, Jf: 1, K: tiocsti},
		Instruction{Code: retK, K: retErrno | ePERM},
		Instruction{Code: retK, K: retAllow},
	)
	return p, nil
}

// Encode lays p out as the array of struct sock_filter bubblewrap reads.
func Encode(p []Instruction) []byte {
	out := make([]byte, 0, 8*len(p))
	for _, in := range p {
		out = binary.LittleEndian.AppendUint16(out, in.Code)
		out = append(out, in.Jt, in.Jf)
		out = binary.LittleEndian.AppendUint32(out, in.K)
	}
	return out
}
