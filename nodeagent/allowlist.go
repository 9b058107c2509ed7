package nodeagent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// maxManifestFile bounds one allowlist file; a manifest is a few hundred bytes.
const maxManifestFile = 1 << 20

// ErrAllowlist is the parent of every reason an allowlist cannot be loaded.
// The agent does not start with an allowlist it cannot read entirely.
var ErrAllowlist = errors.New("nodeagent: tool allowlist")

// Entry is one tool the node owner allows on this host.
type Entry struct {
	Manifest sandbox.Manifest
	// Hash is protocol.ManifestHash of the file's bytes: what a dispatch must name.
	Hash string
	// File is where the manifest was read from.
	File string
}

// Allowlist is the node owner's local tool allowlist: the tools this host
// runs, each with the manifest the owner wrote. It is read once at start and
// never changes; it is safe for concurrent use.
type Allowlist struct {
	entries map[string]Entry
	refs    []protocol.ToolRef
}

// LoadAllowlist reads every *.json file in dir, each one sandbox manifest.
// Any file that cannot be read or parsed, two files naming the same tool, or
// a directory or file that someone other than its owner may write (or owned
// by someone other than root or the agent's user) is an error naming the
// file: a node owner's allowlist is all or nothing. An empty directory is an
// empty allowlist.
func LoadAllowlist(dir string) (*Allowlist, error) {
	if err := checkOwner(dir, true); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrAllowlist, dir, err)
	}
	slices.Sort(files)
	a := &Allowlist{entries: make(map[string]Entry, len(files))}
	for _, f := range files {
		e, err := loadEntry(f)
		if err != nil {
			return nil, err
		}
		if prev, dup := a.entries[e.Manifest.Name]; dup {
			return nil, fmt.Errorf("%w: %s and %s both define the tool %q", ErrAllowlist, prev.File, f, e.Manifest.Name)
		}
		a.entries[e.Manifest.Name] = e
		a.refs = append(a.refs, protocol.ToolRef{Name: e.Manifest.Name, Hash: e.Hash})
	}
	slices.SortFunc(a.refs, func(x, y protocol.ToolRef) int { return strings.Compare(x.Name, y.Name) })
	return a, nil
}

func loadEntry(file string) (Entry, error) {
	if err := checkOwner(file, false); err != nil {
		return Entry{}, err
	}
	f, err := os.Open(file)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrAllowlist, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxManifestFile+1))
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %v", ErrAllowlist, file, err)
	}
	if len(raw) > maxManifestFile {
		return Entry{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrAllowlist, file, maxManifestFile)
	}
	m, err := sandbox.ParseManifest(raw)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %v", ErrAllowlist, file, err)
	}
	h, err := protocol.ManifestHash(raw)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %v", ErrAllowlist, file, err)
	}
	return Entry{Manifest: m, Hash: h, File: file}, nil
}

// checkOwner refuses a path that others could change: whoever may write the
// allowlist decides what runs on this host.
func checkOwner(path string, dir bool) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAllowlist, err)
	}
	switch {
	case dir && !st.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrAllowlist, path)
	case !dir && !st.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrAllowlist, path)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s may be written by other users (mode %v); chmod go-w it", ErrAllowlist, path, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("%w: %s belongs to uid %d, neither root nor the agent's user", ErrAllowlist, path, sys.Uid)
	}
	return nil
}

// Lookup returns the entry of the named tool.
func (a *Allowlist) Lookup(name string) (Entry, bool) {
	e, ok := a.entries[name]
	return e, ok
}

// Refs lists the allowed tools with their manifest hashes, sorted by name:
// what the agent announces in its hello.
func (a *Allowlist) Refs() []protocol.ToolRef { return slices.Clone(a.refs) }

// Len is the number of allowed tools.
func (a *Allowlist) Len() int { return len(a.entries) }
