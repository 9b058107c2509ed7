package process

import (
	"fmt"
	"os"
	"syscall"
)

// runAs is the credential tools start with: RunAsUID and RunAsGID with no
// supplementary groups when the agent is root, nil (the agent's own user)
// otherwise.
func (d *Driver) runAs() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: uint32(d.cfg.RunAsUID), Gid: uint32(d.cfg.RunAsGID), Groups: []uint32{}}
}

// User says whom tools run as.
func (d *Driver) User() string {
	if c := d.runAs(); c != nil {
		return fmt.Sprintf("uid %d gid %d, no supplementary groups", c.Uid, c.Gid)
	}
	return fmt.Sprintf("the agent's own user (uid %d)", os.Geteuid())
}

// handOver gives the workspace directory to the tool's user and returns it
// open: the tool starts in it through /proc/self/fd, so that it gets there
// even when the directories above are private to the agent (its data
// directory is 0700). The directory is opened before it is changed, so a
// path swapped meanwhile changes nothing else.
func handOver(workspace string, c *syscall.Credential) (*os.File, error) {
	f, err := os.OpenFile(workspace, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	var st syscall.Stat_t
	err = syscall.Fstat(int(f.Fd()), &st)
	if err == nil && (st.Uid != c.Uid || st.Gid != c.Gid) {
		err = f.Chown(int(c.Uid), int(c.Gid))
	}
	if err == nil && st.Mode&0o700 != 0o700 {
		err = f.Chmod(os.FileMode(st.Mode&0o777 | 0o700))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("workspace: give it to uid %d: %w", c.Uid, err)
	}
	return f, nil
}

// startIn is the working directory that reaches the open directory f. Go's
// child changes directory before it moves descriptors about (see execFD in
// sandbox/internal/proc), so f's number still names f then.
func startIn(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }
