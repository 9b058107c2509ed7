package freeport

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPortsAreDistinctAndBindable: every port handed out binds for TCP and
// UDP, none twice, and none from the kernel's ephemeral range.
func TestPortsAreDistinctAndBindable(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		_, p, _ := net.SplitHostPort(addr)
		if port, _ := strconv.Atoi(p); port < low || port >= high {
			t.Fatalf("%s is outside [%d, %d)", addr, low, high)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("tcp %s: %v", addr, err)
		}
		l.Close()
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatalf("udp %s: %v", addr, err)
		}
		pc.Close()
	}
}

// TestOtherProcessesSkipHeldPorts: a port held by this process is never
// handed to another process (the child prints the ports it got).
func TestOtherProcessesSkipHeldPorts(t *testing.T) {
	if os.Getenv("FREEPORT_CHILD") == "1" {
		for range 400 {
			addr, err := Loopback()
			if err != nil {
				os.Exit(3)
			}
			os.Stdout.WriteString(addr + "\n")
		}
		os.Exit(0)
	}
	mine := map[string]bool{}
	for range 400 {
		addr, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		mine[addr] = true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestOtherProcessesSkipHeldPorts$")
	cmd.Env = append(os.Environ(), "FREEPORT_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	got := strings.Fields(string(out))
	if len(got) != 400 {
		t.Fatalf("child got %d ports, want 400", len(got))
	}
	for _, a := range got {
		if mine[a] {
			t.Fatalf("%s was handed to the child while this process holds it", a)
		}
	}
}

// TestBlock: a block's ports are all bindable and never handed out again.
func TestBlock(t *testing.T) {
	base, err := Block(23)
	if err != nil {
		t.Fatal(err)
	}
	for p := base; p < base+23; p++ {
		if !free(net.JoinHostPort("127.0.0.1", strconv.Itoa(p))) {
			t.Fatalf("port %d of the block is not free", p)
		}
	}
	for range 300 {
		addr, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		_, ps, _ := net.SplitHostPort(addr)
		if p, _ := strconv.Atoi(ps); p >= base && p < base+23 {
			t.Fatalf("port %d of the block handed out again", p)
		}
	}
}
