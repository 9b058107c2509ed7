package faults

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Subnet is the private /24 of the suite's namespaces. Its addresses exist
// only inside the namespaces a Net creates: the host has no route to it and
// no address in it, so no test packet leaves those namespaces.
const Subnet = "10.213.7"

// NamePrefix starts the name of every namespace the suite creates, followed
// by the creating process's pid, so that Sweep removes the namespaces of
// earlier runs whose process is gone and never those of a run still going.
const NamePrefix = "writf"

// Net is one run's network: a hub namespace holding a bridge, and one
// namespace per member, each joined to the bridge by a veth pair whose
// bridge end carries the member's name. A member's address is Subnet.N.
type Net struct {
	prefix  string
	hub     string
	members map[string]string // member → its address
	order   []string
	// attached: made by another process (AttachNet); Close leaves it.
	attached bool
}

// ErrNoNetns is returned when network namespaces cannot be made here (not
// root, or no ip command).
var ErrNoNetns = errors.New("faults: network namespaces need root and iproute2's ip")

// Available reports why namespaces cannot be made here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root", ErrNoNetns)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoNetns, err)
	}
	return nil
}

// ip runs the ip command with args; no shell is involved.
func ip(args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// NewNet creates the hub and one namespace per member, with addresses
// Subnet.hosts[i]. On error everything made so far is removed.
func NewNet(members []string, hosts []int) (n *Net, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	Sweep()
	n = &Net{prefix: fmt.Sprintf("%s%d", NamePrefix, os.Getpid()), members: map[string]string{}}
	n.hub = n.prefix + "-hub"
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	if err := ip("netns", "add", n.hub); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"-n", n.hub, "link", "set", "lo", "up"},
		{"-n", n.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", n.hub, "link", "set", "br0", "up"},
	} {
		if err := ip(args...); err != nil {
			return nil, err
		}
	}
	for i, m := range members {
		ns := n.NS(m)
		addr := fmt.Sprintf("%s.%d", Subnet, hosts[i])
		n.order = append(n.order, m)
		if err := ip("netns", "add", ns); err != nil {
			return nil, err
		}
		n.members[m] = addr
		for _, args := range [][]string{
			{"-n", ns, "link", "set", "lo", "up"},
			// Both ends are made in the hub; one moves to the member.
			{"-n", n.hub, "link", "add", m, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"-n", n.hub, "link", "set", m, "master", "br0"},
			{"-n", n.hub, "link", "set", m, "up"},
			{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
		} {
			if err := ip(args...); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// NS is the namespace name of member m.
func (n *Net) NS(m string) string { return n.prefix + "-" + m }

// Addr is member m's address.
func (n *Net) Addr(m string) string { return n.members[m] }

// Command returns a command that runs name with args inside member m's
// namespace (ip netns exec, which execs name: the process's pid is the
// command's own, so signals reach it directly).
func (n *Net) Command(m, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.NS(m), name}, args...)...)
}

// Cut takes member m's link to the bridge down: m can reach no other member.
func (n *Net) Cut(m string) error { return ip("-n", n.hub, "link", "set", m, "down") }

// Heal brings member m's link up again.
func (n *Net) Heal(m string) error { return ip("-n", n.hub, "link", "set", m, "up") }

// Close kills every process left in the run's namespaces and deletes them.
func (n *Net) Close() {
	if n.attached {
		return
	}
	for _, m := range n.order {
		removeNS(n.NS(m))
	}
	removeNS(n.hub)
}

// removeNS kills the processes in namespace ns, then deletes it.
func removeNS(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGCONT)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for range 50 {
		if out, _ := exec.Command("ip", "netns", "pids", ns).Output(); len(bytes.TrimSpace(out)) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ip("netns", "delete", ns)
}

// Sweep removes the namespaces, and the processes in them, of earlier runs
// whose creating process no longer exists (a run killed before its cleanup).
func Sweep() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], NamePrefix) {
			continue
		}
		rest := strings.TrimPrefix(f[0], NamePrefix)
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		if syscall.Kill(pid, 0) == nil {
			continue // its run is still going
		}
		removeNS(f[0])
	}
}

// AttachNet returns the Net that the process with pid created with
// NewNet(members, hosts), for a process running inside one of its
// namespaces; it creates nothing, and its Close removes nothing.
func AttachNet(pid int, members []string, hosts []int) *Net {
	n := &Net{prefix: fmt.Sprintf("%s%d", NamePrefix, pid), members: map[string]string{}, attached: true}
	n.hub = n.prefix + "-hub"
	for i, m := range members {
		n.members[m] = fmt.Sprintf("%s.%d", Subnet, hosts[i])
	}
	return n
}

// Blackhole makes member m and each of peers drop what they send to each
// other (a blackhole route each way), leaving m's link up: m can still be
// reached by every other member.
func (n *Net) Blackhole(m string, peers ...string) error {
	for _, p := range peers {
		if err := ip("-n", n.NS(m), "route", "add", "blackhole", n.Addr(p)+"/32"); err != nil {
			return err
		}
		if err := ip("-n", n.NS(p), "route", "add", "blackhole", n.Addr(m)+"/32"); err != nil {
			return err
		}
	}
	return nil
}

// Unblackhole removes the routes Blackhole added.
func (n *Net) Unblackhole(m string, peers ...string) error {
	var first error
	for _, p := range peers {
		for _, args := range [][]string{
			{"-n", n.NS(m), "route", "del", "blackhole", n.Addr(p) + "/32"},
			{"-n", n.NS(p), "route", "del", "blackhole", n.Addr(m) + "/32"},
		} {
			if err := ip(args...); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
