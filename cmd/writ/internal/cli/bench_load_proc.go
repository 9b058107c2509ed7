package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuProfileEnv names the file a writ process writes a CPU profile of its
// whole life to (see startEnvCPUProfile): how writ bench load --cpuprofile
// profiles the servers and agents it starts.
const cpuProfileEnv = "WRIT_CPUPROFILE"

// loadProc is a child process of writ bench load, one of the binary's own
// commands, whose CPU time the bench reads from /proc/PID/stat.
type loadProc struct {
	role string // dev, s1, s2, s3, agent, echo-server, sandbox
	log  string // its stdout and stderr, unless read through out
	cmd  *exec.Cmd
	in   io.WriteCloser // its stdin, for the floors' line commands
	out  *bufio.Scanner // its stdout, for the floors' answers
	wait chan struct{}  // closed when it has exited
	err  error          // its exit, once wait is closed
}

// startLoadProc starts this binary with args as role, its output in
// DIR/role.log (or, with pipes, its stdout read by the bench), with a CPU
// profile of its life in profDir/role.pprof when profDir is set.
func startLoadProc(dir, profDir, role string, pipes bool, args ...string) (*loadProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &loadProc{role: role, log: filepath.Join(dir, role+".log"), wait: make(chan struct{})}
	logf, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = withoutEnv(os.Environ(), cpuProfileEnv)
	if profDir != "" {
		p.cmd.Env = append(p.cmd.Env, cpuProfileEnv+"="+filepath.Join(profDir, role+".pprof"))
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	stopWithParent(p.cmd)
	if pipes {
		p.cmd.Stdout = nil
		if p.in, err = p.cmd.StdinPipe(); err != nil {
			return nil, err
		}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		p.out = bufio.NewScanner(out)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); close(p.wait) }()
	return p, nil
}

// withoutEnv is env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// cpu is the user and system time the process has used so far.
func (p *loadProc) cpu() (time.Duration, error) {
	d, ok := childCPU(p.cmd.Process.Pid)
	if !ok {
		return 0, fmt.Errorf("%s: no CPU time in /proc/%d/stat", p.role, p.cmd.Process.Pid)
	}
	return d, nil
}

// exited reports an error when the process has stopped.
func (p *loadProc) exited() error {
	select {
	case <-p.wait:
		return fmt.Errorf("%s exited (%v); its log: %s", p.role, p.err, p.logTail())
	default:
		return nil
	}
}

// logTail is the last lines of the process's log.
func (p *loadProc) logTail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-8):], "\n")
}

// line reads one JSON line from the process's stdout into v.
func (p *loadProc) line(v any) error {
	if !p.out.Scan() {
		if err := p.out.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%s: no answer (%s)", p.role, p.logTail())
	}
	return json.Unmarshal(p.out.Bytes(), v)
}

// command writes one line to the process's stdin and reads its answer into
// v.
func (p *loadProc) command(line string, v any) error {
	if _, err := fmt.Fprintln(p.in, line); err != nil {
		return err
	}
	return p.line(v)
}

// stop ends the process as an operator would (a CPU profile is written on
// the way out), and kills it after 30 s.
func (p *loadProc) stop() {
	p.signal()
	select {
	case <-p.wait:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.wait
	}
}

// signal asks the process to stop, without waiting: a floor by closing its
// stdin, a server or agent with SIGTERM.
func (p *loadProc) signal() {
	if p.in != nil {
		p.in.Close()
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
}

// loadProcs are the Writ processes of one setup.
type loadProcs []*loadProc

// cpu is each process's CPU time so far, by role.
func (ps loadProcs) cpu() (map[string]time.Duration, error) {
	m := map[string]time.Duration{}
	for _, p := range ps {
		d, err := p.cpu()
		if err != nil {
			return nil, err
		}
		m[p.role] = d
	}
	return m, nil
}

func (ps loadProcs) exited() error {
	for _, p := range ps {
		if err := p.exited(); err != nil {
			return err
		}
	}
	return nil
}

// loadAvg1 is the host's one-minute load average (0 where /proc has none).
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
