package process

import (
	"strings"
	"testing"
)

func TestSeatbeltProfile(t *testing.T) {
	s := seatbelt{Exe: "/opt/tools/fmt", ReadOnly: []string{"/usr/lib", "/System"}, Workspace: "/var/ws/1",
		Devices: []string{"/dev/null"}, ProxyPort: 3128}
	p := s.Profile()
	for _, want := range []string{
		"(deny default)",
		`(allow process-exec (literal "/opt/tools/fmt"))`,
		`(subpath "/usr/lib")`,
		"(allow file-write*\n    (subpath \"/var/ws/1\")\n    (literal \"/dev/null\"))",
		`(allow network-outbound (remote tcp "localhost:3128"))`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("profile lacks %q:\n%s", want, p)
		}
	}
	if strings.Count(p, "file-write*") != 1 || strings.Contains(p, "(allow default)") {
		t.Errorf("profile grants more than it should:\n%s", p)
	}
	s.ProxyPort = 0
	if strings.Contains(s.Profile(), "network") {
		t.Errorf("no proxy, yet a network rule:\n%s", s.Profile())
	}
	// A path cannot close its string and add a rule.
	s.Workspace = "/tmp/x\")\n(allow default)(\"\\"
	p = s.Profile()
	if strings.Contains(p, "\n(allow default)") || !strings.Contains(p, `(subpath "/tmp/x\")\x0a(allow default)(\"\\")`) {
		t.Errorf("workspace not quoted:\n%s", p)
	}
}
