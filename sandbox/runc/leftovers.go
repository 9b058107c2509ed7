package runc

import (
	"os"
	"path/filepath"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// removeLeftovers removes what the runtime left of container id after
// "delete --force": runsc does not always remove, for a container whose
// sandbox was killed while starting (a timeout or cancellation kills it
// through its cgroup), its cgroup directories or its lock file.
//
// rmdir removes only an empty cgroup, so nothing with a process in it
// goes; a lock file goes only once its container's state file is gone.
func removeLeftovers(state, parent, id string) {
	v1, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", parent, id))
	for _, dir := range append(v1, filepath.Join(cgroupRoot, parent, id)) {
		_ = os.Remove(dir)
	}
	if live, _ := filepath.Glob(filepath.Join(state, id+"_sandbox:*.state")); len(live) == 0 {
		locks, _ := filepath.Glob(filepath.Join(state, id+"_sandbox:*.lock"))
		for _, l := range locks {
			_ = os.Remove(l)
		}
	}
}
