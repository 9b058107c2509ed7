package fsm

import (
	"fmt"
	"testing"
	"time"
)

// Every policy install is a version named by its entry's index, kept up to
// maxPolicyVersions (oldest dropped), the same on a replica restored from a
// snapshot midway.
func TestPolicyVersions(t *testing.T) {
	f := newFSM(t)
	b := &logBuilder{t: t}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < maxPolicyVersions+6; i++ {
		c := PutPolicy{Text: fmt.Sprintf("// v%d", i), Hash: fmt.Sprintf("sha256:%d", i), At: at.Add(time.Duration(i) * time.Minute)}
		if i == 5 {
			c.RollbackOf = 2
		}
		f.Apply(b.add(MsgPutPolicy, c))
	}
	vs := f.Reader().PolicyVersions()
	if len(vs) != maxPolicyVersions {
		t.Fatalf("%d versions kept, want %d", len(vs), maxPolicyVersions)
	}
	last := vs[len(vs)-1]
	if last.Version != b.logs[len(b.logs)-1].Index || last.Text != f.Reader().Policy().Text || last.Hash != f.Reader().Policy().Hash {
		t.Fatalf("the last version %+v is not the current policy %+v", last, f.Reader().Policy())
	}
	if first := vs[0]; first.Version != 7 || first.Text != "// v6" {
		t.Fatalf("the oldest kept version: %+v, want version 7 (// v6)", first)
	}
	if _, ok := f.Reader().PolicyVersion(6); ok {
		t.Fatal("a dropped version is still found")
	}
	if v, ok := f.Reader().PolicyVersion(20); !ok || v.Text != "// v19" || !v.InstalledAt.Equal(at.Add(19*time.Minute)) {
		t.Fatalf("version 20: %+v %v", v, ok)
	}
	// The same log replayed whole, or from a snapshot taken midway, gives
	// the same versions.
	want, _ := f.Encode()
	if got, _ := replay(t, b.logs).Encode(); string(got) != string(want) {
		t.Fatal("a replay keeps other versions")
	}
	restored := restoreInto(t, replay(t, b.logs[:10]), newFSM(t))
	for _, l := range b.logs[10:] {
		restored.Apply(l)
	}
	if got, _ := restored.Encode(); string(got) != string(want) {
		t.Fatal("a replica restored midway keeps other versions")
	}
}

// An entry written before versions were kept installs the policy and
// records no version.
func TestPolicyEntryWithoutTimeKeepsNoVersion(t *testing.T) {
	f := newFSM(t)
	b := &logBuilder{t: t}
	f.Apply(b.add(MsgPutPolicy, PutPolicy{Text: "x", Hash: "sha256:x"}))
	if f.Reader().Policy().Hash != "sha256:x" || len(f.Reader().PolicyVersions()) != 0 {
		t.Fatalf("policy %+v, versions %+v", f.Reader().Policy(), f.Reader().PolicyVersions())
	}
	f.Apply(b.add(MsgPutPolicy, PutPolicy{Text: "y", Hash: "sha256:y", At: t0, RollbackOf: 1}))
	if v, ok := f.Reader().PolicyVersion(2); !ok || !v.InstalledAt.Equal(t0) || v.RollbackOf != 1 || len(f.Reader().PolicyVersions()) != 1 {
		t.Fatalf("%+v %v", v, ok)
	}
}

// The versions kept are bounded by their total size too; the current one is
// always kept.
func TestPolicyVersionsBoundedBySize(t *testing.T) {
	f := newFSM(t)
	b := &logBuilder{t: t}
	big := string(make([]byte, 1<<20))
	for i := 0; i < 6; i++ {
		f.Apply(b.add(MsgPutPolicy, PutPolicy{Text: big, Hash: fmt.Sprintf("sha256:%d", i), At: t0}))
	}
	if vs := f.Reader().PolicyVersions(); len(vs) != 4 || vs[3].Hash != "sha256:5" {
		t.Fatalf("%d versions kept, the last %s; want 4 (4 MiB), the last sha256:5", len(vs), vs[len(vs)-1].Hash)
	}
	huge := string(make([]byte, 5<<20))
	f.Apply(b.add(MsgPutPolicy, PutPolicy{Text: huge, Hash: "sha256:huge", At: t0}))
	if vs := f.Reader().PolicyVersions(); len(vs) != 1 || vs[0].Hash != "sha256:huge" {
		t.Fatalf("a version past the size bound alone: %d kept", len(vs))
	}
}
