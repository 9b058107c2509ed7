// Package buildinfo says which build of writ is running: the version set at
// link time, the commit Go recorded, the Go version and the protocol spoken.
// `writ version` prints it and every server answers it on GET /v1/version.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version is set at build time:
// -ldflags "-X github.com/writhq/writ/internal/buildinfo.Version=v1.2.3".
var Version = "dev"

// Protocol names the version of the wire protocol (docs/protocol.md).
const Protocol = "writ/v1"

// Info describes this build.
type Info struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Protocol string `json:"protocol"`
}

// Get returns this build's Info.
func Get() Info {
	v := Info{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Protocol: Protocol}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
	}
	return v
}
