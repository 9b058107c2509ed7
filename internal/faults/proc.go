package faults

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Proc is one process of the cluster (a server or an agent) that the
// nemesis kills, pauses and starts again, always with the same arguments
// and the same data directory, in the same namespace.
type Proc struct {
	Name   string // s1, a1, …: also its member of the Net
	net    *Net
	bin    string
	args   []string
	env    []string // added to the suite's environment
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts the process in its namespace, appending its output to its
// log. It is an error to start a running process.
func (p *Proc) Start() error {
	if p.Running() {
		return fmt.Errorf("faults: %s is already running", p.Name)
	}
	logf, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := p.net.Command(p.Name, p.bin, p.args...)
	if p.env != nil {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("faults: start %s: %w", p.Name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(p.exited)
	return nil
}

// Running reports whether the process was started and has not exited.
func (p *Proc) Running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Crashed reports whether the process exited without being killed.
func (p *Proc) Crashed() bool { return p.cmd != nil && !p.Running() }

// Kill sends SIGKILL (after SIGCONT, so that a paused process dies too) and
// waits for the process to be gone.
func (p *Proc) Kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}

// Pause stops the process with SIGSTOP; Resume continues it.
func (p *Proc) Pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *Proc) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *Proc) signal(s syscall.Signal) error {
	if !p.Running() {
		return fmt.Errorf("faults: %s is not running", p.Name)
	}
	return p.cmd.Process.Signal(s)
}
