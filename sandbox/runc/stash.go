package runc

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// stash copies the inspected executable into the agent's private state
// directory, named by its content hash, and returns that path. The
// container binds the copy, not the tool's path on the host, so that what
// was checked is what runs even if the host path changes meanwhile. Copies
// are kept: the next invocation of the same binary reuses it.
func (d *Driver) stash(exe *os.File) (string, error) {
	sum, err := d.detect.Hash(exe)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(d.cfg.StateDir, "exe", hex.EncodeToString(sum[:]))
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".copy-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, io.NewSectionReader(exe, 0, 1<<40)); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("runc: stash executable: %w", err)
	}
	return dst, nil
}

var seq atomic.Uint64

// containerID names a container after the agent's pid, so that cleanStale
// can tell which containers belonged to an agent that is gone.
func containerID() string {
	return fmt.Sprintf("writ-%d-%d", os.Getpid(), seq.Add(1))
}

// cleanStale deletes the containers and bundles of agents that no longer
// run: a crashed agent leaves them behind.
func (d *Driver) cleanStale() {
	state := filepath.Join(d.cfg.StateDir, "state")
	stale := func(id string) bool {
		rest, ok := strings.CutPrefix(id, "writ-")
		owner, _, ok2 := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(owner)
		return ok && ok2 && err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
	}
	// runc and crun keep a directory per container; runsc keeps files
	// named after its sandbox: ask the runtime too.
	ids := map[string]bool{}
	if entries, err := os.ReadDir(state); err == nil {
		for _, e := range entries {
			ids[e.Name()] = true
		}
	}
	list := exec.Command(d.bin, slices.Concat([]string{"--root", state}, d.flavor.args(false), []string{"list", "--quiet"})...)
	var out bytes.Buffer
	list.Stdout = &out
	if err := runHidden(list, d.hidden()); err == nil {
		for _, id := range strings.Fields(out.String()) {
			ids[id] = true
		}
	}
	for id := range ids {
		if stale(id) {
			d.runtime(state, "delete", "--force", id)
		}
	}
	if entries, err := os.ReadDir(filepath.Join(d.cfg.StateDir, "bundles")); err == nil {
		for _, e := range entries {
			if stale(e.Name()) {
				os.RemoveAll(filepath.Join(d.cfg.StateDir, "bundles", e.Name()))
			}
		}
	}
}
