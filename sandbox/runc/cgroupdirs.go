package runc

import (
	"os"
	"path/filepath"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// removeCgroupDirs removes the container's cgroup directories that the
// runtime left: runsc does not remove them for a container whose sandbox
// was killed (a timeout or cancellation kills it through its cgroup). rmdir
// removes only an empty cgroup, so nothing with a process in it goes.
func removeCgroupDirs(parent, id string) {
	v1, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", parent, id))
	for _, dir := range append(v1, filepath.Join(cgroupRoot, parent, id)) {
		_ = os.Remove(dir)
	}
}
