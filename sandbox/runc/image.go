package runc

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/writhq/writ/internal/jsonx"
)

// ErrImage is the parent of every error reading an OCI image.
var ErrImage = errors.New("runc: bad OCI image")

// maxJSON bounds index.json, manifests and other small documents.
const maxJSON = 1 << 20

// UnpackImage makes dst (which must not exist) the root filesystem of the
// OCI image layout tarball at tarPath: the image of index.json for
// linux/GOARCH (or its only one), layers applied in order with whiteouts,
// each blob checked against its digest, at most maxBytes of file data.
// Nothing is fetched from a registry. Errors wrap ErrImage.
func UnpackImage(tarPath, dst string, maxBytes int64) error {
	layout := dst + ".layout"
	if err := os.RemoveAll(layout); err != nil {
		return err
	}
	defer os.RemoveAll(layout)
	docs, err := readLayout(tarPath, layout, maxBytes)
	if err != nil {
		return err
	}
	if !strings.Contains(string(docs["oci-layout"]), `"imageLayoutVersion"`) {
		return fmt.Errorf("%w: no oci-layout file: not an OCI image layout", ErrImage)
	}
	m, err := pickManifest(docs["index.json"], layout, 0)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	u, err := newUnpacker(dst, maxBytes)
	if err != nil {
		return err
	}
	defer u.Close()
	for _, l := range m.Layers {
		if err := applyBlob(u, layout, l); err != nil {
			return err
		}
	}
	return nil
}

// readLayout copies the blobs of the tarball into dir, checking each one's
// sha256 against its name, and returns the small top-level documents.
func readLayout(tarPath, dir string, maxBytes int64) (map[string][]byte, error) {
	f, err := os.Open(tarPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	docs := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrImage, err)
		}
		name := strings.TrimPrefix(filepath.Clean("/"+hdr.Name), "/")
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		switch {
		case name == "index.json" || name == "oci-layout":
			if docs[name], err = io.ReadAll(io.LimitReader(tr, maxJSON)); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrImage, err)
			}
		case strings.HasPrefix(name, "blobs/sha256/"):
			hexsum := strings.TrimPrefix(name, "blobs/sha256/")
			if digest.NewDigestFromEncoded(digest.SHA256, hexsum).Validate() != nil || hdr.Size > maxBytes {
				return nil, fmt.Errorf("%w: bad blob %s", ErrImage, name)
			}
			if err := saveBlob(tr, filepath.Join(dir, hexsum), hexsum, hdr.Size); err != nil {
				return nil, err
			}
		}
	}
}

func saveBlob(r io.Reader, path, hexsum string, size int64) error {
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%w: blob %s: %v", ErrImage, hexsum, err)
	}
	defer out.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, size)); err != nil {
		return err
	}
	if hex.EncodeToString(h.Sum(nil)) != hexsum {
		return fmt.Errorf("%w: blob %s does not match its digest", ErrImage, hexsum)
	}
	return nil
}

// blob reads a small document blob named by d.
func blob(layout string, d ocispec.Descriptor) ([]byte, error) {
	if d.Digest.Validate() != nil || d.Digest.Algorithm() != digest.SHA256 {
		return nil, fmt.Errorf("%w: digest %q", ErrImage, d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(layout, d.Digest.Encoded()))
	if err != nil || len(b) > maxJSON {
		return nil, fmt.Errorf("%w: blob %s missing or too large", ErrImage, d.Digest)
	}
	return b, nil
}

// pickManifest finds the image manifest for this platform in an index,
// following at most one nested index.
func pickManifest(indexJSON []byte, layout string, depth int) (ocispec.Manifest, error) {
	var idx ocispec.Index
	if err := jsonx.UnmarshalLenient(indexJSON, &idx); err != nil || depth > 1 {
		return ocispec.Manifest{}, fmt.Errorf("%w: index: %v", ErrImage, err)
	}
	var cands []ocispec.Descriptor
	for _, d := range idx.Manifests {
		if d.Platform == nil || d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			cands = append(cands, d)
		}
	}
	if len(cands) != 1 {
		return ocispec.Manifest{}, fmt.Errorf("%w: want one image for linux/%s in index.json, found %d", ErrImage, runtime.GOARCH, len(cands))
	}
	b, err := blob(layout, cands[0])
	if err != nil {
		return ocispec.Manifest{}, err
	}
	if cands[0].MediaType == ocispec.MediaTypeImageIndex {
		return pickManifest(b, layout, depth+1)
	}
	var m ocispec.Manifest
	if err := jsonx.UnmarshalLenient(b, &m); err != nil || m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest {
		return m, fmt.Errorf("%w: manifest %s: %v", ErrImage, cands[0].Digest, err)
	}
	return m, nil
}

// applyBlob decompresses one layer as its media type says and applies it.
func applyBlob(u *unpacker, layout string, d ocispec.Descriptor) error {
	if d.Digest.Validate() != nil || d.Digest.Algorithm() != digest.SHA256 {
		return fmt.Errorf("%w: layer digest %q", ErrImage, d.Digest)
	}
	f, err := os.Open(filepath.Join(layout, d.Digest.Encoded()))
	if err != nil {
		return fmt.Errorf("%w: layer %s missing", ErrImage, d.Digest)
	}
	defer f.Close()
	var r io.Reader = f
	switch d.MediaType {
	case ocispec.MediaTypeImageLayer, "application/vnd.docker.image.rootfs.diff.tar":
	case ocispec.MediaTypeImageLayerGzip, "application/vnd.docker.image.rootfs.diff.tar.gzip":
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%w: layer %s: %v", ErrImage, d.Digest, err)
		}
		defer gz.Close()
		r = gz
	default:
		return fmt.Errorf("%w: layer media type %q not supported (tar, tar+gzip)", ErrImage, d.MediaType)
	}
	return u.apply(r)
}

// unpack returns the root filesystem of the configured image, unpacking it
// the first time: StateDir/images/<sha256 of the tarball>.
func (d *Driver) unpack() (string, error) {
	f, err := os.Open(d.cfg.Image)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(d.cfg.StateDir, "images", hex.EncodeToString(h.Sum(nil)))
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	tmp := fmt.Sprintf("%s.tmp-%d", dst, os.Getpid())
	os.RemoveAll(tmp)
	if err := UnpackImage(d.cfg.Image, tmp, d.cfg.ImageMaxBytes); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return dst, os.Rename(tmp, dst)
}
