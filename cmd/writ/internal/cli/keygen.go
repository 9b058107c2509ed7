package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
)

type keygenResult struct {
	Type        string `json:"type"`
	KeyID       string `json:"key_id"`
	PrivateFile string `json:"private_file"`
	PublicFile  string `json:"public_file,omitempty"`
	Public      string `json:"public,omitempty"`
}

func newKeygen(e *env) *cobra.Command {
	var id, dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "keygen {hmac|ed25519|note} --id ID",
		Short: "Generate a key: an orchestrator HMAC secret, an Ed25519 key, or a checkpoint note key",
		Long: `Generate a key. Private keys are written readable only by their owner (mode
0600), public keys with mode 0644.

  hmac     an orchestrator's 32-byte HMAC-SHA256 secret: ID.key holds its base64
  ed25519  an approver, server or node key: ID.key holds the 32-byte seed in
           base64, ID.pub the 32-byte public key in base64
  note     a C2SP signed-note key for checkpoints, named ID (the log origin):
           ID.key holds the note signer key, ID.pub the verifier key

Existing files are never replaced unless --force is given.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"hmac", "ed25519", "note"},
		RunE: func(_ *cobra.Command, args []string) error {
			if id == "" {
				return fmt.Errorf("--id is required")
			}
			// --dir is made when missing, 0700: it holds secret keys.
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			base := filepath.Join(dir, fileBase(id))
			res, err := generateKey(args[0], id, base, force)
			if err != nil {
				return err
			}
			if e.output == "text" {
				fmt.Fprintf(e.out, "wrote %s key %q to %s\n", res.Type, res.KeyID, res.PrivateFile)
				if res.PublicFile != "" {
					fmt.Fprintf(e.out, "public key in %s: %s\n", res.PublicFile, res.Public)
				}
				return nil
			}
			return e.printJSON(res)
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "key id (for note keys, the name of the log origin)")
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to write the key files in (made, 0700, when missing)")
	cmd.Flags().BoolVar(&force, "force", false, "replace existing key files")
	return cmd
}

func generateKey(kind, id, base string, force bool) (keygenResult, error) {
	res := keygenResult{Type: kind, KeyID: id, PrivateFile: base + ".key"}
	var priv, pub string
	switch kind {
	case "hmac":
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return res, err
		}
		priv = base64.StdEncoding.EncodeToString(secret)
	case "ed25519":
		pk, sk, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return res, err
		}
		priv = base64.StdEncoding.EncodeToString(sk.Seed())
		pub = base64.StdEncoding.EncodeToString(pk)
	case "note":
		skey, vkey, err := note.GenerateKey(rand.Reader, id)
		if err != nil {
			return res, fmt.Errorf("note key %q: %v", id, err)
		}
		priv, pub = skey, vkey
	default:
		return res, fmt.Errorf("unknown key type %q: want hmac, ed25519 or note", kind)
	}
	if pub != "" {
		res.PublicFile, res.Public = base+".pub", pub
		if err := writeKeyFile(res.PublicFile, []byte(pub+"\n"), 0o644, force); err != nil {
			return res, err
		}
	}
	return res, writeKeyFile(res.PrivateFile, []byte(priv+"\n"), 0o600, force)
}

// fileBase makes a key id safe as a file name: anything but [A-Za-z0-9._-]
// becomes '_' (note key names are often origins such as example.com/log).
func fileBase(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	s := string(b)
	if strings.Trim(s, ".") == "" {
		s = "_" + s
	}
	return s
}
