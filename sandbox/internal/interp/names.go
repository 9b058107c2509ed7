// Package interp decides whether an executable is a shell, an interpreter
// or a launcher (something that runs another program named by its
// arguments). It looks at the file that would really run — through
// symlinks, hard links and renamed copies, by the content hash of the known
// interpreters installed on the host — never at argv[0] alone.
package interp

import "strings"

// exact are denied names: shells, interpreters and launchers.
var exact = map[string]bool{
	// shells
	"sh": true, "bash": true, "rbash": true, "dash": true, "zsh": true, "ksh": true,
	"ksh93": true, "mksh": true, "pdksh": true, "ash": true, "hush": true, "csh": true,
	"tcsh": true, "fish": true, "rc": true, "yash": true, "elvish": true, "nu": true,
	"xonsh": true, "pwsh": true, "powershell": true, "posh": true, "msh": true,
	// interpreters
	"perl": true, "ruby": true, "irb": true, "node": true, "nodejs": true, "deno": true,
	"bun": true, "php": true, "lua": true, "luajit": true, "tclsh": true, "wish": true,
	"expect": true, "awk": true, "gawk": true, "mawk": true, "nawk": true, "busybox": true,
	"toybox": true, "gdb": true, "R": true, "Rscript": true, "julia": true, "guile": true,
	"racket": true, "sbcl": true, "ocaml": true, "jshell": true, "osascript": true,
	"erl": true, "escript": true, "elixir": true, "groovy": true, "scala": true,
	"python": true, "pypy": true, "jython": true, "ipython": true, "jrunscript": true,
	// launchers
	"env": true, "xargs": true, "nohup": true, "setsid": true, "nice": true, "ionice": true,
	"chrt": true, "taskset": true, "timeout": true, "time": true, "stdbuf": true,
	"chroot": true, "su": true, "sudo": true, "doas": true, "runuser": true, "unshare": true,
	"nsenter": true, "flock": true, "script": true, "strace": true, "ltrace": true,
	"valgrind": true, "watch": true, "start-stop-daemon": true, "systemd-run": true,
	"setpriv": true, "capsh": true, "firejail": true, "bwrap": true, "prlimit": true,
	"run-parts": true, "linux32": true, "linux64": true, "setarch": true, "ld.so": true,
}

// versioned are denied with a version suffix too: python3, python3.11,
// perl5.36.0, lua5.4, tclsh8.6, php8.2...
var versioned = []string{"python", "pypy", "perl", "ruby", "php", "lua", "tclsh", "wish",
	"node", "ksh", "pwsh", "guile", "jython", "ipython"}

// prefixes are denied with any suffix: the dynamic loaders run any binary
// given as their argument.
var prefixes = []string{"ld-linux", "ld-musl", "ld64.so"}

// multiCall are executables whose behaviour is chosen by argv[0] or
// argv[1]; see applet.
var multiCall = map[string]bool{"busybox": true, "toybox": true}

// Denied reports whether a file or applet name is a shell, interpreter or
// launcher.
func Denied(name string) bool {
	if exact[name] {
		return true
	}
	for _, p := range versioned {
		if rest, ok := strings.CutPrefix(name, p); ok && version(rest) {
			return true
		}
	}
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// version accepts "3", "3.11", "5.36.0", "-5.4", "_8".
func version(s string) bool {
	s = strings.TrimLeft(s, "-_")
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}
