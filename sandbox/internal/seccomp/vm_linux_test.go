//go:build linux && (amd64 || arm64)

package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter's verdicts, written out here rather than taken from the
// package, so that a changed constant shows up as a failure.
const (
	allow    = 0x7fff0000
	kill     = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	errEPERM = 0x00050000 | 1
	errNOSYS = 0x00050000 | 38
)

// hostArch is the AUDIT_ARCH_* the kernel reports for this build's ABI.
func hostArch(t *testing.T) uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	t.Fatalf("no audit arch for %s", runtime.GOARCH)
	return 0
}

// call is one system call as the filter sees it: struct seccomp_data.
type call struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// data lays c out as the kernel does on a little-endian machine (nr, arch,
// instruction_pointer, args[6]) and then byte-swaps every 32-bit word:
// x/net/bpf's VM loads words big-endian where the kernel loads them in host
// order, so the swap makes each load see what the kernel's would. A filter
// reading the wrong half of an argument reads the wrong word here too.
func (c call) data() []byte {
	b := make([]byte, 0, 64)
	b = binary.LittleEndian.AppendUint32(b, c.nr)
	b = binary.LittleEndian.AppendUint32(b, c.arch)
	b = binary.LittleEndian.AppendUint64(b, 0x0000_7f00_dead_beef) // instruction_pointer
	for _, a := range c.args {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return b
}

// vm loads p into x/net/bpf's VM, refusing any instruction the VM would not
// execute as the kernel does.
func vm(t *testing.T, p []Instruction) *bpf.VM {
	t.Helper()
	if len(p) > 4096 {
		t.Fatalf("%d instructions, the kernel takes at most 4096", len(p))
	}
	prog := make([]bpf.Instruction, len(p))
	for i, in := range p {
		d := bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
		if _, raw := d.(bpf.RawInstruction); raw {
			t.Fatalf("instruction %d (%+v) is not one the VM knows", i, in)
		}
		prog[i] = d
	}
	v, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the VM refuses the program: %v", err)
	}
	return v
}

func run(t *testing.T, v *bpf.VM, c call) uint32 {
	t.Helper()
	got, err := v.Run(c.data())
	if err != nil {
		t.Fatalf("run %+v: %v", c, err)
	}
	return uint32(got)
}

func verdict(v uint32) string {
	switch v {
	case allow:
		return "ALLOW"
	case kill:
		return "KILL_PROCESS"
	case errEPERM:
		return "ERRNO(EPERM)"
	case errNOSYS:
		return "ERRNO(ENOSYS)"
	}
	return fmt.Sprintf("%#x", v)
}

// cloneNew are the CLONE_NEW* flags, each of which must be refused.
var cloneNew = map[string]uint64{
	"CLONE_NEWNS": unix.CLONE_NEWNS, "CLONE_NEWCGROUP": unix.CLONE_NEWCGROUP, "CLONE_NEWUTS": unix.CLONE_NEWUTS,
	"CLONE_NEWIPC": unix.CLONE_NEWIPC, "CLONE_NEWUSER": unix.CLONE_NEWUSER, "CLONE_NEWPID": unix.CLONE_NEWPID,
	"CLONE_NEWNET": unix.CLONE_NEWNET,
}

// verdictCase is one call and the verdict the filter must give it.
type verdictCase struct {
	name string
	c    call
	want uint32
}

// cases are the verdicts both programs share.
func cases(t *testing.T) []verdictCase {
	arch := hostArch(t)
	type tc = verdictCase
	out := []tc{
		{"getpid", call{nr: unix.SYS_GETPID, arch: arch}, allow},
		{"read", call{nr: unix.SYS_READ, arch: arch, args: [6]uint64{0, 0x1000, 10}}, allow},
		{"openat", call{nr: unix.SYS_OPENAT, arch: arch}, allow},
		{"execve", call{nr: unix.SYS_EXECVE, arch: arch}, allow},
		{"mmap", call{nr: unix.SYS_MMAP, arch: arch}, allow},
		{"clone3", call{nr: unix.SYS_CLONE3, arch: arch}, errNOSYS},
		// Go's runtime and libc start threads and processes with clone.
		{"clone a thread", call{nr: unix.SYS_CLONE, arch: arch, args: [6]uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD}}, allow},
		{"clone a process", call{nr: unix.SYS_CLONE, arch: arch, args: [6]uint64{uint64(unix.SIGCHLD)}}, allow},
		{"clone with namespace bits in the high word only", call{nr: unix.SYS_CLONE, arch: arch, args: [6]uint64{unix.CLONE_NEWUSER << 32}}, allow},
		{"clone NEWUSER with a high word", call{nr: unix.SYS_CLONE, arch: arch, args: [6]uint64{0xffff_ffff_0000_0000 | unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}}, errEPERM},
		{"ioctl TIOCSTI", call{nr: unix.SYS_IOCTL, arch: arch, args: [6]uint64{0, unix.TIOCSTI, 0xc000}}, errEPERM},
		{"ioctl TIOCSTI on fd 7", call{nr: unix.SYS_IOCTL, arch: arch, args: [6]uint64{7, unix.TIOCSTI}}, errEPERM},
		{"ioctl TCGETS", call{nr: unix.SYS_IOCTL, arch: arch, args: [6]uint64{0, unix.TCGETS}}, allow},
		{"ioctl on an fd numbered TIOCSTI", call{nr: unix.SYS_IOCTL, arch: arch, args: [6]uint64{unix.TIOCSTI, unix.TCGETS}}, allow},
		{"unshare NEWUSER", call{nr: unix.SYS_UNSHARE, arch: arch, args: [6]uint64{unix.CLONE_NEWUSER}}, errEPERM},
		{"unshare files only", call{nr: unix.SYS_UNSHARE, arch: arch, args: [6]uint64{unix.CLONE_FILES}}, errEPERM},
		{"setns", call{nr: unix.SYS_SETNS, arch: arch}, errEPERM},
		{"mount", call{nr: unix.SYS_MOUNT, arch: arch}, errEPERM},
		{"umount2", call{nr: unix.SYS_UMOUNT2, arch: arch}, errEPERM},
		{"pivot_root", call{nr: unix.SYS_PIVOT_ROOT, arch: arch}, errEPERM},
		{"open_tree", call{nr: unix.SYS_OPEN_TREE, arch: arch}, errEPERM},
		{"fsopen", call{nr: unix.SYS_FSOPEN, arch: arch}, errEPERM},
		{"keyctl", call{nr: unix.SYS_KEYCTL, arch: arch}, errEPERM},
		{"add_key", call{nr: unix.SYS_ADD_KEY, arch: arch}, errEPERM},
		{"bpf", call{nr: unix.SYS_BPF, arch: arch}, errEPERM},
		{"perf_event_open", call{nr: unix.SYS_PERF_EVENT_OPEN, arch: arch}, errEPERM},
		{"userfaultfd", call{nr: unix.SYS_USERFAULTFD, arch: arch}, errEPERM},
		{"kexec_load", call{nr: unix.SYS_KEXEC_LOAD, arch: arch}, errEPERM},
		{"init_module", call{nr: unix.SYS_INIT_MODULE, arch: arch}, errEPERM},
		{"finit_module", call{nr: unix.SYS_FINIT_MODULE, arch: arch}, errEPERM},
		{"open_by_handle_at", call{nr: unix.SYS_OPEN_BY_HANDLE_AT, arch: arch}, errEPERM},
		{"process_vm_writev", call{nr: unix.SYS_PROCESS_VM_WRITEV, arch: arch}, errEPERM},
		{"reboot", call{nr: unix.SYS_REBOOT, arch: arch}, errEPERM},
		{"ptrace ATTACH", call{nr: unix.SYS_PTRACE, arch: arch, args: [6]uint64{unix.PTRACE_ATTACH}}, errEPERM},
		{"ptrace POKEDATA", call{nr: unix.SYS_PTRACE, arch: arch, args: [6]uint64{unix.PTRACE_POKEDATA}}, errEPERM},
		// Another ABI's numbers mean other calls: killed whatever the number.
		{"i386 getpid", call{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_I386}, kill},
		{"arm getpid", call{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_ARM}, kill},
		{"no arch", call{nr: unix.SYS_GETPID}, kill},
	}
	for name, flag := range cloneNew {
		out = append(out, tc{"clone " + name, call{nr: unix.SYS_CLONE, arch: arch, args: [6]uint64{flag | uint64(unix.SIGCHLD)}}, errEPERM})
	}
	out = append(out, archCases(arch)...)
	return out
}

// TestProgramVerdicts runs Program in x/net/bpf's VM: ordinary calls are
// allowed; namespaces, mounts, tracing, BPF, keyrings, modules and TIOCSTI
// answer EPERM; clone3 answers ENOSYS (so libc falls back to clone, whose
// flags the filter can read); another architecture's ABI is killed.
func TestProgramVerdicts(t *testing.T) {
	t.Parallel()
	p, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	v := vm(t, p)
	for _, tc := range append(cases(t),
		verdictCase{"ptrace TRACEME", call{nr: unix.SYS_PTRACE, arch: hostArch(t), args: [6]uint64{unix.PTRACE_TRACEME}}, errEPERM},
		verdictCase{"ptrace DETACH", call{nr: unix.SYS_PTRACE, arch: hostArch(t), args: [6]uint64{unix.PTRACE_DETACH}}, errEPERM},
	) {
		if got := run(t, v, tc.c); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, verdict(got), verdict(tc.want))
		}
	}
}

// TestProgramTracedVerdicts: the process tier's program differs only in
// letting ptrace(PTRACE_TRACEME) and ptrace(PTRACE_DETACH) through.
func TestProgramTracedVerdicts(t *testing.T) {
	t.Parallel()
	p, err := ProgramTraced()
	if err != nil {
		t.Fatal(err)
	}
	v := vm(t, p)
	arch := hostArch(t)
	for _, tc := range append(cases(t),
		verdictCase{"ptrace TRACEME", call{nr: unix.SYS_PTRACE, arch: arch, args: [6]uint64{unix.PTRACE_TRACEME}}, allow},
		verdictCase{"ptrace DETACH", call{nr: unix.SYS_PTRACE, arch: arch, args: [6]uint64{unix.PTRACE_DETACH}}, allow},
		verdictCase{"ptrace TRACEME from another ABI", call{nr: unix.SYS_PTRACE, arch: unix.AUDIT_ARCH_I386, args: [6]uint64{unix.PTRACE_TRACEME}}, kill},
	) {
		if got := run(t, v, tc.c); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, verdict(got), verdict(tc.want))
		}
	}
}

// TestEveryDeniedCallRefused: every number of the table's denied list
// answers EPERM, in both programs, and the allowed neighbours of a denied
// number are not caught by it.
func TestEveryDeniedCallRefused(t *testing.T) {
	t.Parallel()
	arch := hostArch(t)
	denied := map[uint32]bool{}
	for _, nr := range table.denied {
		denied[nr] = true
	}
	for _, mk := range []func() ([]Instruction, error){Program, ProgramTraced} {
		p, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		v := vm(t, p)
		for _, nr := range table.denied {
			args := [6]uint64{}
			if nr == unix.SYS_PTRACE {
				args[0] = unix.PTRACE_ATTACH
			}
			if got := run(t, v, call{nr: nr, arch: arch, args: args}); got != errEPERM {
				t.Errorf("syscall %d: %s, want ERRNO(EPERM)", nr, verdict(got))
			}
			for _, n := range []uint32{nr - 1, nr + 1} {
				if denied[n] || n == table.clone || n == table.clone3 || n == table.ioctl {
					continue
				}
				if got := run(t, v, call{nr: n, arch: arch}); got != allow {
					t.Errorf("syscall %d (next to denied %d): %s, want ALLOW", n, nr, verdict(got))
				}
			}
		}
	}
}
