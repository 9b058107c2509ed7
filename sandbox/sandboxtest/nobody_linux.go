package sandboxtest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// asNobodyEnv marks a test binary that asNobody started again as uid 65534.
const asNobodyEnv = "WRIT_SANDBOXTEST_AS_NOBODY"

// nobodyMarker is what the test logs when it passed as uid 65534.
const nobodyMarker = "WRIT-PASSED-AS-UID"

// asNobody, in a test that passed as root, runs the same test again in a
// new test process as uid and gid 65534 (an agent that is not root), and
// fails unless it passed there. In that process it logs the marker.
func asNobody(t *testing.T) {
	t.Helper()
	if os.Getenv(asNobodyEnv) == "1" {
		t.Logf("%s %d", nobodyMarker, os.Geteuid())
		return
	}
	if os.Geteuid() != 0 {
		return
	}
	// The test binary and a temporary directory where uid 65534 can reach
	// them: go test builds in a directory private to root.
	dir, err := os.MkdirTemp("", "writ-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "tmp")
	err = os.Mkdir(tmp, 0o755)
	if err == nil {
		err = os.Chown(tmp, 65534, 65534)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, p := range strings.Split(t.Name(), "/") {
		parts = append(parts, "^"+regexp.QuoteMeta(p)+"$")
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-test.run", strings.Join(parts, "/"), "-test.count=1", "-test.v", "-test.timeout=5m")
	cmd.Dir = tmp
	// Without CI=true: the marker, logged only by a case that passed,
	// already fails this test when the tier cannot run as uid 65534.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CI=") })
	cmd.Env = append(env, asNobodyEnv+"=1", builtEnv+"="+builtList(), "TMPDIR="+tmp, "HOME="+tmp)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), fmt.Sprintf("%s %d", nobodyMarker, 65534)) {
		t.Fatalf("the test as uid 65534 failed (%v):\n%s", err, out.String())
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
