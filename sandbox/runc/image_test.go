package runc_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

type entry struct {
	name, body, link string
	typ              byte
}

func layerTar(t testing.TB, entries []entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ == tar.TypeDir {
			h.Mode = 0o755
		}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return buf.Bytes()
}

// ociLayout writes an OCI image layout tarball of layers (mediaType, bytes)
// and returns its path.
func ociLayout(t testing.TB, layers [][2]string) string {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, b []byte) {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
		tw.Write(b)
	}
	desc := func(mt string, b []byte) map[string]any {
		sum := sha256.Sum256(b)
		add("blobs/sha256/"+hex.EncodeToString(sum[:]), b)
		return map[string]any{"mediaType": mt, "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(b)}
	}
	var ls []any
	for _, l := range layers {
		ls = append(ls, desc(l[0], []byte(l[1])))
	}
	cfg := desc("application/vnd.oci.image.config.v1+json", []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
	man, _ := jsonx.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": cfg, "layers": ls})
	idx, _ := jsonx.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{desc("application/vnd.oci.image.manifest.v1+json", man)}})
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", idx)
	tw.Close()
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(b []byte) string {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.String()
}

// TestImage unpacks a two-layer image with whiteouts and escape attempts,
// then runs a tool in it.
func TestImage(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	l1 := layerTar(t, []entry{
		{name: "etc/", typ: tar.TypeDir}, {name: "etc/passwd", body: "layer1", typ: tar.TypeReg},
		{name: "etc/other", body: "o", typ: tar.TypeReg},
		{name: "old/x", body: "x", typ: tar.TypeReg}, {name: "old/y", body: "y", typ: tar.TypeReg},
		{name: "evil", link: outside, typ: tar.TypeSymlink},
		{name: "up", link: "../../../..", typ: tar.TypeSymlink},
		{name: "up/uppwned", body: "u", typ: tar.TypeReg},
		{name: "../../escape", body: "e", typ: tar.TypeReg},
		{name: "hard", link: "old/y", typ: tar.TypeLink},
	})
	l2 := layerTar(t, []entry{
		{name: "etc/passwd", body: "layer2\n", typ: tar.TypeReg},
		{name: "etc/.wh..wh..opq", typ: tar.TypeReg},
		{name: "old/.wh.x", typ: tar.TypeReg},
	})
	img := ociLayout(t, [][2]string{{"application/vnd.oci.image.layer.v1.tar+gzip", gz(l1)},
		{"application/vnd.oci.image.layer.v1.tar", string(l2)}})
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := runc.UnpackImage(img, root, 1<<30); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"etc/passwd": "layer2\n", "old/y": "y", "hard": "y", "escape": "e",
		"uppwned": "u"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s: got %q %v, want %q", p, b, err, want)
		}
	}
	for _, p := range []string{filepath.Join(root, "old/x"), filepath.Join(root, "etc/other"), filepath.Join(outside, "pwned")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	// Through a symlink to a directory that exists only on the host: the
	// image is refused or the file lands inside the root, never outside.
	evil := ociLayout(t, [][2]string{{"application/vnd.oci.image.layer.v1.tar", string(layerTar(t, []entry{
		{name: "evil", link: outside, typ: tar.TypeSymlink}, {name: "evil/pwned", body: "p", typ: tar.TypeReg}}))}})
	_ = runc.UnpackImage(evil, filepath.Join(t.TempDir(), "r"), 1<<30)
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Errorf("ESCAPED: a layer wrote through a symlink to the host")
	}
	// A blob whose bytes do not match its digest is refused.
	bad := ociLayout(t, [][2]string{{"application/vnd.oci.image.layer.v1.tar", string(l2)}})
	b, _ := os.ReadFile(bad)
	b = bytes.Replace(b, []byte("layer2"), []byte("LAYER2"), 1)
	os.WriteFile(bad, b, 0o644)
	if err := runc.UnpackImage(bad, filepath.Join(t.TempDir(), "r"), 1<<30); !errors.Is(err, runc.ErrImage) {
		t.Errorf("tampered blob: got %v, want ErrImage", err)
	}

	cfg := config(t)
	cfg.RootFS, cfg.Image = "", img
	d, err := runc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "runc", d.Available())
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierRunc, Command: &sandbox.Command{Path: sandboxtest.HostTool(t)}}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: ws,
		Params: jsontext.Value(`{"op":"read","path":"/etc/passwd"}`)})
	if err != nil || out.Status != sandbox.StatusOK || string(out.Output) != "layer2\n" {
		t.Fatalf("run in the image: %v %s %q %q", err, out.Status, out.Output, out.Stderr)
	}
}

// FuzzImageIndex reads arbitrary index.json documents: an error or an
// image, never a panic or a file outside the destination.
func FuzzImageIndex(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:` +
		"0000000000000000000000000000000000000000000000000000000000000000" + `","size":2}]}`))
	f.Add([]byte(`{"manifests":[{"digest":"sha256:../../x"}]}`))
	f.Fuzz(func(t *testing.T, index []byte) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for name, b := range map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": index} {
			tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
			tw.Write(b)
		}
		tw.Close()
		dir := t.TempDir()
		img := filepath.Join(dir, "img.tar")
		os.WriteFile(img, buf.Bytes(), 0o644)
		if err := runc.UnpackImage(img, filepath.Join(dir, "root"), 1<<20); err != nil && !errors.Is(err, runc.ErrImage) {
			t.Fatalf("error %v does not wrap ErrImage", err)
		}
	})
}

// FuzzLayer applies arbitrary tar streams as a layer: whatever they hold,
// nothing appears outside the root.
func FuzzLayer(f *testing.F) {
	f.Add(layerTar(f, []entry{{name: "a/b", body: "x", typ: tar.TypeReg}, {name: "l", link: "/", typ: tar.TypeSymlink},
		{name: "l/c", body: "y", typ: tar.TypeReg}, {name: "a/.wh.b", typ: tar.TypeReg}}))
	f.Add(layerTar(f, []entry{{name: ".wh..", typ: tar.TypeReg}, {name: "a/.wh..", typ: tar.TypeReg}}))
	f.Add(layerTar(f, []entry{{name: "../x", body: "x", typ: tar.TypeReg}, {name: "h", link: "../../etc/passwd", typ: tar.TypeLink}}))
	f.Fuzz(func(t *testing.T, layer []byte) {
		base := t.TempDir()
		root := filepath.Join(base, "root")
		os.Mkdir(root, 0o755)
		img := ociLayout(t, [][2]string{{"application/vnd.oci.image.layer.v1.tar", string(layer)}})
		_ = runc.UnpackImage(img, filepath.Join(base, "unpacked"), 1<<20)
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if e.Name() != "unpacked" && e.Name() != "root" {
				t.Fatalf("%s appeared beside the root", e.Name())
			}
		}
		if left, _ := os.ReadDir(root); len(left) != 0 {
			t.Fatalf("the neighbouring directory was written")
		}
	})
}
