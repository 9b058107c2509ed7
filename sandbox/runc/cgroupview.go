package runc

import (
	"fmt"
	"os/exec"
	"time"
)

// crunProbeTimeout bounds each container crun's probe runs.
const crunProbeTimeout = 15 * time.Second

// cgroupView is what the runtime is shown of the host's cgroup mounts.
type cgroupView struct {
	// hide is a mount point detached in a private mount namespace the
	// runtime starts in, for every command of it (run, kill, delete,
	// list): the cgroup2 mount of a hybrid host, for crun. "" for none.
	hide string
}

// probeCrun creates and deletes one container with crun on the tier's
// root filesystem (probeCreate). crun 1.8 refuses a hybrid host whose
// unified hierarchy holds a controller ("cgroups in hybrid mode not
// supported"), with --cgroup-manager=disabled too. On a hybrid host it then
// probes again with the unified mount hidden (view.hide): crun sees a
// cgroup v1 host and sets the bundle's limits in the v1 controllers (memory
// with swap, pids, cpu quota, devices), where runc sets them on such a host
// too. It returns Version's note.
func (d *Driver) probeCrun(bin, state string) (string, error) {
	global := []string{"--root", state}
	err := probeCreate(d.cfg, bin, global, d.rootfs, crunProbeTimeout, "")
	if err == nil {
		return "", nil
	}
	unified := hybridUnified()
	if unified == "" {
		return "", fmt.Errorf("crun runs no container here: %v", err)
	}
	if herr := probeCreate(d.cfg, bin, global, d.rootfs, crunProbeTimeout, unified); herr != nil {
		return "", fmt.Errorf("crun runs no container here: %v; nor with %s hidden from it: %v", err, unified, herr)
	}
	d.flavor.view.hide = unified
	return "cgroup v1 controllers, " + unified + " hidden from it", nil
}

// hidden is the mount point the runtime is started without, "" for none.
func (d *Driver) hidden() string {
	if d.flavor.view == nil {
		return ""
	}
	return d.flavor.view.hide
}

// runHidden runs cmd where the mount point hide is not mounted (see
// startHidden) and waits for it.
func runHidden(cmd *exec.Cmd, hide string) error {
	if err := startHidden(cmd, hide); err != nil {
		return err
	}
	return cmd.Wait()
}

// StartRuntime starts cmd, a command of the OCI runtime run by hand
// (Runtime, RuntimeArgs), in the view of the host the tier starts the
// runtime in: on a hybrid host crun is started without the unified mount.
func (d *Driver) StartRuntime(cmd *exec.Cmd) error { return startHidden(cmd, d.hidden()) }
