// Package wasm is the wasm sandbox tier: a tool is a WASI (wasip1) module
// run by wazero inside the agent's process. The module sees its workspace
// as its only directory (mounted at "/"), gets its parameters on stdin,
// writes its output on stdout, has no sockets, no clock-free escape from
// its deadline (WithCloseOnContextDone is always on) and a memory limit in
// pages. Compiled code is cached on disk and in memory.
package wasm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Config configures the wasm tier.
type Config struct {
	// CacheDir holds wazero's compilation cache. It must be private to the
	// agent: compiled code found there is run.
	CacheDir string
	// Interpreter forces wazero's interpreter instead of its compiler
	// (slower, for platforms without the compiler).
	Interpreter bool
	// MaxModules bounds how many compiled modules are kept in memory per
	// memory limit.
	MaxModules int
	// NoMemoryImage compiles modules as they are, so that wazero applies
	// their data segments at every run, instead of starting each run's
	// memory from a copy of the module's memory image (image.go). Slower;
	// for comparison in benchmarks.
	NoMemoryImage bool
	// NoInitImage runs a prepared tool's _initialize in every run instead
	// of starting each run from the image it leaves (initimage.go).
	// Slower; for comparison in benchmarks.
	NoInitImage bool
}

// DefaultConfig caches under the user's cache directory.
func DefaultConfig() Config {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return Config{CacheDir: filepath.Join(dir, "writ", "wasm"), MaxModules: 64}
}

// Validate checks c.
func (c Config) Validate() error {
	if c.CacheDir == "" || !filepath.IsAbs(c.CacheDir) {
		return fmt.Errorf("wasm: CacheDir %q must be an absolute path", c.CacheDir)
	}
	if c.MaxModules < 1 {
		return errors.New("wasm: MaxModules must be at least 1")
	}
	return nil
}
