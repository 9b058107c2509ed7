package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/internal/testtier"
)

// The test runs in two processes. The outer one (root) builds the writ
// binary and the witness tool, creates the namespaces, and runs the test
// binary again inside the client namespace, where the suite reaches the
// servers; whatever happens to that inner run, the outer one kills every
// process left in the namespaces and deletes them.
const (
	envInside  = "WRIT_FAULTS_INSIDE" // the outer process's pid
	envWrit    = "WRIT_FAULTS_WRIT"
	envWitness = "WRIT_FAULTS_WITNESS"
	envDir     = "WRIT_FAULTS_DIR"
	// WRIT_FAULTS=long runs the long run (make faults); WRIT_FAULTS_ROUNDS
	// sets its number of rounds of every scenario.
	envMode   = "WRIT_FAULTS"
	envRounds = "WRIT_FAULTS_ROUNDS"
	// WRIT_FAULTS_ONLY, a regular expression, runs only the scenarios whose
	// names it matches.
	envOnly = "WRIT_FAULTS_ONLY"
	// WRIT_FAULTS_BIN names a writ binary to test instead of building one.
	envBin = "WRIT_FAULTS_BIN"
)

// TestFaults runs every scenario against a cluster of three servers and two
// agents in network namespaces, under load, and fails on any violated
// guarantee: a key run twice, an acknowledged intent lost, a receipt missing
// or doubled, an intent stuck, a resubmission answered with another intent,
// a non-linearizable idempotency history, checkpoints that disagree, or an
// isolated server that admitted an intent. The short run (by default) does
// each scenario once with four submitters; WRIT_FAULTS=long repeats them.
func TestFaults(t *testing.T) {
	if os.Getenv(envInside) != "" {
		inside(t)
		return
	}
	testtier.Slow(t, "the fault suite runs minutes")
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: the fault suite must run)", err)
		}
		t.Skip(err)
	}
	// Not t.TempDir, whose parent only root may enter: the agents' process
	// tier runs the witness as another user, which appends to files here.
	dir, err := os.MkdirTemp("", "writ-faults-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the cluster's state and logs stay in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writ, witness := filepath.Join(dir, "writ"), filepath.Join(dir, "witness")
	builds := []struct{ out, pkg string }{{writ, "../../cmd/writ"}, {witness, "../../nodeagent/internal/witness"}}
	if bin := os.Getenv(envBin); bin != "" {
		if writ, err = filepath.Abs(bin); err != nil {
			t.Fatal(err)
		}
		builds = builds[1:]
	}
	for _, b := range builds {
		if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	n, err := NewNet(Members, Hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	// Interrupted (^C, a timeout's kill of the test comes as SIGKILL and is
	// left to the next run's Sweep), the namespaces still go.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			n.Close()
			os.Exit(1)
		}
	}()
	state := filepath.Join(dir, "cluster")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run=^TestFaults$", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := n.Command(ClientName, os.Args[0], args...)
	cmd.Env = append(os.Environ(), envInside+"="+strconv.Itoa(os.Getpid()), envWrit+"="+writ, envWitness+"="+witness, envDir+"="+state)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the fault suite failed: %v", err)
	}
}

// inside is the suite proper, in the client namespace.
func inside(t *testing.T) {
	pid, _ := strconv.Atoi(os.Getenv(envInside))
	n := AttachNet(pid, Members, Hosts)
	cfg := Config{Writ: os.Getenv(envWrit), Witness: os.Getenv(envWitness), Dir: os.Getenv(envDir), AgentConcurrency: 8}
	c, err := NewCluster(cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MountData(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Stop()
		if t.Failed() {
			for _, p := range append(append([]*Proc{}, c.Servers...), c.Agents...) {
				t.Logf("%s log (last lines):\n%s", p.Name, Excerpt(p))
			}
		}
	}()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	load, hold, times, rounds := DefaultLoadConfig(), 5*time.Second, 1, 1
	if os.Getenv(envMode) == "long" {
		load.Workers, load.Pause = 16, 20*time.Millisecond
		hold, times, rounds = 23*time.Second, 3, 3
		if r, err := strconv.Atoi(os.Getenv(envRounds)); err == nil && r > 0 {
			rounds = r
		}
	}
	var only *regexp.Regexp
	if e := os.Getenv(envOnly); e != "" {
		if only, err = regexp.Compile(e); err != nil {
			t.Fatalf("%s: %v", envOnly, err)
		}
	}
	s := &Suite{C: c, Checker: NewChecker(c), Load: load, Logf: t.Logf}
	var reports []*Report
	began := time.Now()
	for round := range rounds {
		for _, sc := range Scenarios(hold, times) {
			if only != nil && !only.MatchString(sc.Name) {
				continue
			}
			if rounds > 1 {
				sc.Name = fmt.Sprintf("r%d-%s", round+1, sc.Name)
			}
			r, err := s.Run(ctx, sc)
			reports = append(reports, r)
			for _, p := range r.Problems {
				t.Errorf("%s: %s", sc.Name, p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	total := Sum("total", reports)
	fmt.Printf("faults: %s\nfaults: %d scenarios in %s\n", total, len(reports), time.Since(began).Round(time.Second))
	if total.Duplicates != 0 || total.Lost != 0 || total.Extra != 0 || total.Stuck != 0 {
		t.Errorf("duplicates %d, lost %d, extra %d, stuck %d: want 0 each", total.Duplicates, total.Lost, total.Extra, total.Stuck)
	}
	if total.Executions != total.Completed+total.RanNotCompleted+total.RanStuck {
		t.Errorf("the witness counted %d executions; %d intents completed, %d ran without completing and %d ran but were stuck",
			total.Executions, total.Completed, total.RanNotCompleted, total.RanStuck)
	}
	if total.Completed == 0 || total.Faults == 0 {
		t.Errorf("%d intents completed under %d faults: the suite tested nothing", total.Completed, total.Faults)
	}
}
