package seccomp

// syscallTable holds one architecture's numbers; arch 0 means none.
type syscallTable struct {
	arch                 uint32
	x32                  bool // reject the x32 ABI's numbers (bit 30)
	denied               []uint32
	clone, clone3, ioctl uint32
	ptrace               uint32
}
