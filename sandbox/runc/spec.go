package runc

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/writhq/writ/sandbox"
)

// ociVersion is the spec version the bundle declares: the oldest our
// runtimes (runc 1.1, crun, runsc) all accept.
const ociVersion = "1.0.2"

// bundle describes one container.
type bundle struct {
	argv      []string
	env       []string
	exe       string // host path of the checked copy of the executable
	workspace string // host path
	cgroup    string // cgroups path, "/<parent>/<id>"
	netns     string // the egress proxy's network namespace, "" for an empty one
	hosts     string // host path of the /etc/hosts to bind, "" for none
}

// spec builds the container's runtime-spec configuration.
func (d *Driver) spec(m sandbox.Manifest, b bundle) *specs.Spec {
	l := m.Limits
	rlimit := func(typ string, v uint64) specs.POSIXRlimit { return specs.POSIXRlimit{Type: typ, Hard: v, Soft: v} }
	rlimits := []specs.POSIXRlimit{
		rlimit("RLIMIT_CORE", 0),
		{Type: "RLIMIT_CPU", Soft: uint64(l.CPUSeconds), Hard: uint64(l.CPUSeconds) + 1},
		rlimit("RLIMIT_AS", uint64(l.MemoryBytes+d.cfg.AddressSpaceSlack)),
		rlimit("RLIMIT_NOFILE", uint64(l.OpenFiles)),
	}
	ro := []string{"rbind", "ro", "nosuid", "nodev"}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=" + itoa(min(l.MemoryBytes, 64<<20))}},
	}
	for _, p := range m.ReadOnly {
		mounts = append(mounts, specs.Mount{Destination: p, Type: "bind", Source: p, Options: ro})
	}
	mounts = append(mounts,
		specs.Mount{Destination: m.Command.Path, Type: "bind", Source: b.exe, Options: []string{"bind", "ro", "nosuid", "nodev"}},
		specs.Mount{Destination: d.cfg.WorkspaceDir, Type: "bind", Source: b.workspace, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
	)
	if b.hosts != "" {
		mounts = append(mounts, specs.Mount{Destination: "/etc/hosts", Type: "bind", Source: b.hosts,
			Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
	}
	swap := l.MemoryBytes
	period := uint64(100_000)
	quota := int64(d.cfg.CPUs * float64(period))
	return &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{
			User:            specs.User{UID: d.cfg.UID, GID: d.cfg.GID, AdditionalGids: []uint32{d.cfg.GID}},
			Args:            b.argv,
			Env:             b.env,
			Cwd:             d.cfg.WorkspaceDir,
			Capabilities:    &specs.LinuxCapabilities{}, // none, in every set
			Rlimits:         rlimits,
			NoNewPrivileges: true,
		},
		Root:     &specs.Root{Path: d.rootfs, Readonly: true},
		Hostname: "writ",
		Mounts:   mounts,
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace, Path: b.netns}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace}, {Type: specs.CgroupNamespace},
			},
			CgroupsPath: b.cgroup,
			Resources: &specs.LinuxResources{
				Memory: &specs.LinuxMemory{Limit: &l.MemoryBytes, Swap: &swap},
				Pids:   &specs.LinuxPids{Limit: l.Pids},
				CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
				// No device but the ones the runtime always creates.
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
			},
			Seccomp:       seccompProfile(),
			MaskedPaths:   maskedPaths,
			ReadonlyPaths: readonlyPaths,
		},
	}
}

var maskedPaths = []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
	"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}

var readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

func itoa(v int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// Linux values, spelled out because the bundle is for Linux whatever the
// system that builds the agent.
const (
	tiocsti      = 0x5412     // ioctl: push bytes into a terminal's input
	cloneNewUser = 0x10000000 // clone flag CLONE_NEWUSER
	errnoEPERM   = 1
	errnoENOSYS  = 38
)
