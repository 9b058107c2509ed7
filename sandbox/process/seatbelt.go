package process

import (
	"fmt"
	"strings"
)

// seatbelt describes what the macOS sandbox-exec profile of one tool
// grants.
type seatbelt struct {
	Exe       string   // the executable, the only program it may exec
	ReadOnly  []string // readable (system paths, manifest read_only)
	Workspace string   // readable and writable
	Writable  []string // more directories readable and writable (Config.ReadWrite)
	Devices   []string // readable and writable device files
	ProxyPort int      // the egress proxy on localhost; 0 means no network
}

// Profile renders the SBPL profile: deny by default; read system paths,
// the grants and the workspace; write only the workspace and the devices;
// exec only the tool itself; and no network except TCP to the egress
// proxy's port on localhost. Paths are quoted so that no path can end its
// string and add a rule.
func (s seatbelt) Profile() string {
	var b strings.Builder
	b.WriteString("(version 1)\n(deny default)\n")
	b.WriteString("(allow process-fork)\n(allow signal (target same-sandbox))\n")
	b.WriteString("(allow sysctl-read)\n(allow file-read-metadata)\n")
	b.WriteString("(allow mach-lookup (global-name \"com.apple.system.opendirectoryd.libinfo\"))\n")
	fmt.Fprintf(&b, "(allow process-exec (literal %s))\n", sbplString(s.Exe))
	b.WriteString("(allow file-read*\n")
	fmt.Fprintf(&b, "    (literal %s)\n", sbplString(s.Exe))
	for _, p := range s.ReadOnly {
		fmt.Fprintf(&b, "    (subpath %s)\n", sbplString(p))
	}
	for _, p := range s.Writable {
		fmt.Fprintf(&b, "    (subpath %s)\n", sbplString(p))
	}
	fmt.Fprintf(&b, "    (subpath %s))\n", sbplString(s.Workspace))
	fmt.Fprintf(&b, "(allow file-write*\n    (subpath %s)", sbplString(s.Workspace))
	for _, p := range s.Writable {
		fmt.Fprintf(&b, "\n    (subpath %s)", sbplString(p))
	}
	for _, d := range s.Devices {
		fmt.Fprintf(&b, "\n    (literal %s)", sbplString(d))
	}
	b.WriteString(")\n")
	if s.ProxyPort > 0 {
		fmt.Fprintf(&b, "(allow network-outbound (remote tcp \"localhost:%d\"))\n", s.ProxyPort)
	}
	return b.String()
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
