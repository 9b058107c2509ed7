package bwrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// join places bwrap and its sandbox in the run's cgroup while bwrap sets
// the sandbox up, instead of at bwrap's exec stop. On cgroup v1 the first
// move into a group waits for an RCU grace period, milliseconds on a loaded
// host (9 ms at load 20 on the project's VM), which then no longer adds to
// bwrap's own start. Nothing of the tool runs before both are in: bwrap
// writes the sandbox's first process's pid to --info-fd right after
// creating it, and that process waits on --block-fd, after its setup and
// before it forks the tool, until join writes to it. Until then neither
// has started anything else (bwrap runs unprivileged: no helper process),
// and both are in bwrap's process group, which a failed join kills before
// the block is ever released.
type join struct {
	infoR, infoW   *os.File
	blockR, blockW *os.File
	// fill, when set, runs once both are placed, the sandbox's setup is
	// done (awaitBlock) and before the block is released, with the /proc
	// directory of the sandbox's first process, open, and its mount
	// namespace: a non-root agent's workspace is copied into the sandbox's
	// tmpfs then. Its error is kept in fillErr and ends the run.
	fill    func(proc *os.File, mntns uint64) error
	fillErr error
}

func newJoin() (*join, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bwrap: pipe: %w", err)
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		infoR.Close()
		infoW.Close()
		return nil, fmt.Errorf("bwrap: pipe: %w", err)
	}
	return &join{infoR: infoR, infoW: infoW, blockR: blockR, blockW: blockW}, nil
}

// join is proc.Spec.Join: it runs once bwrap (pid) was let go.
func (j *join) join(pid int, add func(int) error) error {
	// bwrap holds the write end now: ours would keep a read from seeing
	// the end of a bwrap that died before writing.
	j.infoW.Close()
	j.blockR.Close()
	if err := place(add, pid); err != nil {
		return err
	}
	child, mntns, err := readChildPid(j.infoR)
	if errors.Is(err, io.EOF) {
		// bwrap ended before it made the sandbox (a bad option): there is
		// nothing to place, and its exit says why.
		return nil
	}
	if err != nil {
		return err
	}
	if err := place(add, child); err != nil {
		return err
	}
	if j.fill != nil {
		switch err := j.fillSandbox(child, mntns); {
		case errors.Is(err, errGone):
			return nil // bwrap's exit says why
		case err != nil:
			j.fillErr = err
			return err
		}
	}
	if _, err := j.blockW.Write([]byte{1}); err != nil && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("bwrap: release the sandbox: %w", err)
	}
	return nil
}

// fillSandbox waits for the sandbox's setup to end and calls fill.
func (j *join) fillSandbox(child int, mntns uint64) error {
	proc, err := os.Open(fmt.Sprintf("/proc/%d", child))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return errGone
		}
		return fmt.Errorf("bwrap: the sandbox's process: %w", err)
	}
	defer proc.Close()
	if err := awaitBlock(proc, blockFD); err != nil {
		return err
	}
	return j.fill(proc, mntns)
}

// readChildPid reads the JSON object bwrap writes to --info-fd and returns
// its "child-pid", the sandbox's first process as the agent sees it, and
// its "mnt-namespace" (0 when absent). It reads no further than that
// object; io.EOF means bwrap wrote nothing.
func readChildPid(r io.Reader) (int, uint64, error) {
	var info struct {
		ChildPid int    `json:"child-pid"`
		MntNS    uint64 `json:"mnt-namespace"`
	}
	if err := json.UnmarshalDecode(jsontext.NewDecoder(r), &info); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, 0, io.EOF
		}
		return 0, 0, fmt.Errorf("bwrap: read --info-fd: %w", err)
	}
	if info.ChildPid <= 0 {
		return 0, 0, fmt.Errorf("bwrap: --info-fd gave no child-pid")
	}
	return info.ChildPid, info.MntNS, nil
}

// place adds pid to the group; a process that is already gone (bwrap or
// its sandbox failed in its setup) needs no place.
func place(add func(int) error, pid int) error {
	if err := add(pid); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Close closes what is left of the pipes. Call it after the run: closing
// the block's write end lets a sandbox still waiting on it go on.
func (j *join) Close() {
	for _, f := range []*os.File{j.infoR, j.infoW, j.blockR, j.blockW} {
		f.Close()
	}
}
