package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
)

func newApproval(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "approval", Short: "Sign and verify approvals of intents"}
	cmd.AddCommand(newApprovalSign(e), newApprovalVerify(e), newApprovalSubmit(e))
	return cmd
}

// readIntentFile reads and strictly decodes an intent from a file. It is not
// authenticated: an approver checks what the intent says, not who sent it.
func readIntentFile(path string) (*protocol.Intent, error) {
	b, err := readSmallFile(path, protocol.DefaultMaxBytes)
	if err != nil {
		return nil, err
	}
	in, err := protocol.DecodeIntent(b, 0)
	if err != nil {
		return nil, fmt.Errorf("intent %s: %v", path, err)
	}
	return in, nil
}

func newApprovalSign(e *env) *cobra.Command {
	var intentFile, key, approver, decision, id string
	var ttl time.Duration
	var clock clockFlag
	cmd := &cobra.Command{
		Use:   "sign --intent FILE --key ID=SEED_FILE --approver NAME [--decision approve|deny]",
		Short: "Sign an approval (or a denial) of an intent; print it as canonical JSON",
		Long: `Sign an approval artifact bound to the intent's id, payload hash and tenant,
with a fresh 16-byte nonce, using the approver's Ed25519 key (a seed file as
written by writ keygen ed25519).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if intentFile == "" || key == "" || approver == "" {
				return fmt.Errorf("--intent, --key and --approver are required")
			}
			in, err := readIntentFile(intentFile)
			if err != nil {
				return err
			}
			ref, err := parseKeyRef("key", key)
			if err != nil {
				return err
			}
			seed, err := readKeyFile(ref.value)
			if err != nil {
				return err
			}
			if len(seed) != ed25519.SeedSize {
				return fmt.Errorf("key file %s: an Ed25519 seed is %d bytes, not %d", ref.value, ed25519.SeedSize, len(seed))
			}
			now, err := clock.now(e)
			if err != nil {
				return err
			}
			nonce := make([]byte, 16)
			if _, err := rand.Read(nonce); err != nil {
				return err
			}
			if id == "" {
				id = randomID("apr-")
			}
			a := &protocol.Approval{
				Type: protocol.KindApproval.Type(), ID: id, IntentID: in.ID, PayloadHash: in.PayloadHash,
				Tenant: in.Tenant, Approver: approver, Decision: decision,
				Nonce: base64.StdEncoding.EncodeToString(nonce), IssuedAt: protocol.FormatTime(now),
				ExpiresAt: protocol.FormatTime(now.Add(ttl)), KeyID: ref.id,
			}
			if err := a.Sign(ed25519.NewKeyFromSeed(seed)); err != nil {
				return err
			}
			return e.printObject(a)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&intentFile, "intent", "", "the intent to approve, as JSON")
	fl.StringVar(&key, "key", "", "ID=SEED_FILE: the approver's Ed25519 key")
	fl.StringVar(&approver, "approver", "", "the approver identity policy sees")
	fl.StringVar(&decision, "decision", protocol.DecisionApprove, "approve or deny")
	fl.StringVar(&id, "id", "", "approval id (default: random)")
	fl.DurationVar(&ttl, "ttl", 5*time.Minute, "time until the approval expires")
	clock.register(cmd)
	return cmd
}

// flagApproverKeys are approver public keys from --approver-key flags.
type flagApproverKeys map[string]protocol.ApproverKey

func (k flagApproverKeys) ApproverKey(_, id string) (protocol.ApproverKey, bool) {
	a, ok := k[id]
	return a, ok
}

type nonceList map[string]bool

func (n nonceList) Consumed(s string) bool { return n[s] }

func newApprovalVerify(e *env) *cobra.Command {
	var intentFile string
	var keys, consumed []string
	var clock clockFlag
	cfg := protocol.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "verify --intent FILE --approver-key ID=PUBKEY_B64 [--consumed NONCE]... < approval.json",
		Short: "Verify an approval read from standard input against an intent",
		Long: `Verify an approval read from standard input against the intent in --intent:
key and signature, binding to the intent's id, payload hash and tenant,
expiry, nonce reuse (against --consumed), and self-approval. Prints one JSON
line, {"valid":true} or {"valid":false,"error":"<code>"}, and exits 0 or 1.

An approver key is ID=PUBKEY_B64, the standard base64 of the 32-byte public key;
ID=PUBKEY_B64:APPROVER also binds the key to that approver identity.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if intentFile == "" {
				return fmt.Errorf("--intent is required")
			}
			in, err := readIntentFile(intentFile)
			if err != nil {
				return err
			}
			ks := flagApproverKeys{}
			for _, k := range keys {
				ref, err := parseKeyRef("approver-key", k)
				if err != nil {
					return err
				}
				pub, who, _ := strings.Cut(ref.value, ":")
				b, err := base64.StdEncoding.Strict().DecodeString(pub)
				if err != nil || len(b) != ed25519.PublicKeySize {
					return fmt.Errorf("--approver-key %s: want the standard base64 of a 32-byte public key", ref.id)
				}
				ks[ref.id] = protocol.ApproverKey{Public: b, Approver: who}
			}
			nonces := nonceList{}
			for _, n := range consumed {
				nonces[n] = true
			}
			v, err := verifierFor(e, cfg, clock)
			if err != nil {
				return err
			}
			raw, err := readInput(e.in, cfg.MaxBytes)
			if err != nil {
				return err
			}
			_, err = v.VerifyApproval(raw, in, ks, nonces, nil)
			return e.report(err)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&intentFile, "intent", "", "the intent the approval is for, as JSON")
	fl.StringArrayVar(&keys, "approver-key", nil, "ID=PUBKEY_B64[:APPROVER]: a registered approver key (repeatable)")
	fl.StringArrayVar(&consumed, "consumed", nil, "a nonce already consumed (repeatable)")
	fl.DurationVar(&cfg.Skew, "skew", cfg.Skew, "how far in the future issued_at may be")
	clock.register(cmd)
	return cmd
}
