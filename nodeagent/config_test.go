package nodeagent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigParsesStrictlyOverDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(`{"servers":["s1.example:7443","10.0.0.2:7443"],"labels":{"site":"lab"},"concurrency":2}`))
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if c.DataDir != d.DataDir || c.ToolsDir != d.ToolsDir || c.Concurrency != 2 || c.Labels["site"] != "lab" || len(c.Servers) != 2 {
		t.Fatalf("got %+v, want the defaults with the file's members on top", c)
	}
	if c.StorePath() != filepath.Join(d.DataDir, "agent.db") || c.Tiers().Wasm.CacheDir != filepath.Join(d.DataDir, "wasm-cache") {
		t.Fatalf("derived paths: %s, %s", c.StorePath(), c.Tiers().Wasm.CacheDir)
	}
	if p := c.Tiers().Process; p.RunAsUID != 65534 || p.RunAsGID != 65534 {
		t.Fatalf("process tier runs as %d:%d by default, want 65534:65534", p.RunAsUID, p.RunAsGID)
	}
	c, err = ParseConfig([]byte(`{"servers":["a:1"],"process_run_as":{"uid":990,"gid":991}}`))
	if p := c.Tiers().Process; err != nil || p.RunAsUID != 990 || p.RunAsGID != 991 {
		t.Fatalf("process_run_as 990:991: got %d:%d, %v", p.RunAsUID, p.RunAsGID, err)
	}
	c, err = ParseConfig([]byte(`{"servers":["a:1"],"data_dir":"/srv/w","runc_rootfs":"/srv/root","runc_runtime":"crun","gvisor_platform":"ptrace"}`))
	if tc := c.Tiers(); err != nil || tc.Runc.Runtime != "crun" || tc.Gvisor.Platform != "ptrace" ||
		tc.Gvisor.OCI.RootFS != "/srv/root" || tc.Gvisor.OCI.StateDir != "/srv/w/gvisor" || tc.Gvisor.OCI.Runtime != "runsc" {
		t.Fatalf("runc_runtime crun, gvisor_platform ptrace: got %+v, %+v, %v", tc.Runc, tc.Gvisor, err)
	}
	if c, _ := ParseConfig([]byte(`{"servers":["a:1"]}`)); c.Tiers().Runc.Runtime != "runc" || c.Tiers().Gvisor.Platform != "" {
		t.Fatalf("defaults: runc runtime %q, gvisor platform %q", c.Tiers().Runc.Runtime, c.Tiers().Gvisor.Platform)
	}
	for name, c := range map[string]struct{ in, want string }{
		"runtime docker":    {`{"servers":["a:1"],"runc_runtime":"docker"}`, "runc_runtime"},
		"platform xen":      {`{"servers":["a:1"],"gvisor_platform":"xen"}`, "gvisor_platform"},
		"unknown member":    {`{"servers":["a:1"],"server":"b:1"}`, "server"},
		"duplicate member":  {`{"servers":["a:1"],"servers":["b:1"]}`, "duplicate"},
		"trailing data":     {`{"servers":["a:1"]} {}`, ""},
		"no servers":        {`{}`, "at least one server"},
		"no port":           {`{"servers":["a"]}`, "host:port"},
		"server twice":      {`{"servers":["a:1","a:1"]}`, "twice"},
		"relative data dir": {`{"servers":["a:1"],"data_dir":"var/lib"}`, "data_dir"},
		"unclean tools dir": {`{"servers":["a:1"],"tools_dir":"/etc/../tmp"}`, "tools_dir"},
		"zero concurrency":  {`{"servers":["a:1"],"concurrency":0}`, "concurrency"},
		"huge concurrency":  {`{"servers":["a:1"],"concurrency":100000}`, "concurrency"},
		"bad label":         {`{"servers":["a:1"],"labels":{"a b":"c"}}`, "label"},
		"bad env":           {`{"servers":["a:1"],"env":{"A=B":"c"}}`, "env"},
		"wrong type":        {`{"servers":"a:1"}`, ""},
		"run as root":       {`{"servers":["a:1"],"process_run_as":{"uid":0,"gid":1000}}`, "process_run_as"},
		"run as root group": {`{"servers":["a:1"],"process_run_as":{"uid":1000,"gid":0}}`, "process_run_as"},
		"run as -1":         {`{"servers":["a:1"],"process_run_as":{"uid":4294967295,"gid":1000}}`, "process_run_as"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.in))
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrConfig mentioning %q", err, c.want)
			}
		})
	}
}

func TestLoadConfigNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agent.json")
	os.WriteFile(p, []byte(`{"servers":[]}`), 0o600)
	if _, err := LoadConfig(p); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), p) {
		t.Fatalf("got %v, want an error naming %s", err, p)
	}
	os.WriteFile(p, []byte(`{"servers":["a:1"],"data_dir":"/srv/writ"}`), 0o600)
	if c, err := LoadConfig(p); err != nil || c.DataDir != "/srv/writ" {
		t.Fatalf("got %+v, %v", c, err)
	}
}

// TestLoadConfigRefusesOpenFile: a configuration (it holds the tools' env)
// that group or others can read is refused, naming the file and the fix.
func TestLoadConfigRefusesOpenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agent.json")
	os.WriteFile(p, []byte(`{"servers":["a:1"],"data_dir":"/srv/writ","env":{"TOKEN":"s3cret"}}`), 0o600)
	for _, m := range []os.FileMode{0o644, 0o640, 0o604} {
		os.Chmod(p, m)
		_, err := LoadConfig(p)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "chmod 600 "+p) {
			t.Errorf("mode %04o: got %v, want ErrConfig naming the fix chmod 600 %s", m, err, p)
		}
	}
	os.Chmod(p, 0o600)
	if _, err := LoadConfig(p); err != nil {
		t.Fatalf("mode 0600: %v", err)
	}
}

// FuzzParseConfig: any input is either refused with ErrConfig or gives a
// configuration that validates.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{"servers":["a:1"]}`, `{"servers":["a:1"],"labels":{"k":"v"},"concurrency":3,"env":{"LANG":"C"}}`, `{}`, `[]`, `{"servers":["[::1]:7443"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted %+v, which does not validate: %v", c, err)
		}
	})
}
