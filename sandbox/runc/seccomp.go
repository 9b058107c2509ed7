package runc

import specs "github.com/opencontainers/runtime-spec/specs-go"

// denied are system calls a tool has no use for and an escape has: kernel
// modules and kexec, mounts and namespaces, tracing, BPF and perf, keyrings,
// handle-based opens (the classic container escape), userfaultfd, and the
// clock, swap, reboot and accounting controls.
var denied = []string{
	"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
	"delete_module", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick",
	"get_kernel_syms", "init_module", "ioperm", "iopl", "kcmp", "kexec_file_load",
	"kexec_load", "keyctl", "lookup_dcookie", "mount", "mount_setattr", "move_mount",
	"name_to_handle_at", "nfsservctl", "open_by_handle_at", "open_tree", "perf_event_open",
	"personality", "pivot_root", "process_vm_readv", "process_vm_writev", "ptrace",
	"query_module", "quotactl", "reboot", "request_key", "setns", "settimeofday",
	"swapoff", "swapon", "sysfs", "umount", "umount2", "unshare", "uselib",
	"userfaultfd", "ustat", "vhangup",
}

// seccompProfile allows what is not denied; denied calls fail with EPERM
// rather than killing, so that tools probing for features degrade. ioctl
// TIOCSTI (typing into a terminal) is denied too.
//
// New namespaces are denied as well: clone with CLONE_NEWUSER (a user
// namespace would hand the tool capabilities over its own namespaces), and
// clone3 returns ENOSYS, because its flags sit behind a pointer seccomp
// cannot read, so that libc falls back to clone.
func seccompProfile() *specs.LinuxSeccomp {
	eperm, enosys := uint(errnoEPERM), uint(errnoENOSYS)
	return &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64, specs.ArchARM},
		Syscalls: []specs.LinuxSyscall{
			{Names: denied, Action: specs.ActErrno, ErrnoRet: &eperm},
			{Names: []string{"ioctl"}, Action: specs.ActErrno, ErrnoRet: &eperm,
				Args: []specs.LinuxSeccompArg{{Index: 1, Value: tiocsti, Op: specs.OpEqualTo}}},
			{Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: &eperm,
				Args: []specs.LinuxSeccompArg{{Index: 0, Value: cloneNewUser, ValueTwo: cloneNewUser, Op: specs.OpMaskedEqual}}},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
		},
	}
}
