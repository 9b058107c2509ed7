package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
)

func newIntent(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "intent", Short: "Sign and verify intents"}
	cmd.AddCommand(newIntentSign(e), newIntentVerify(e), newIntentSubmit(e), newIntentGet(e), newIntentOutput(e), newIntentList(e), newIntentCancel(e))
	return cmd
}

type intentSignFlags struct {
	file, key, params, paramsFile, context string
	in                                     protocol.Intent
	targetNode                             string
	targetLabels                           []string
	ttl                                    time.Duration
	clock                                  clockFlag
}

func newIntentSign(e *env) *cobra.Command {
	var f intentSignFlags
	cmd := &cobra.Command{
		Use:   "sign --key ID=SECRET_FILE [--file INTENT.json] [flags]",
		Short: "Build and sign an intent; print it as canonical JSON",
		Long: `Build an intent from a JSON file of its fields, from flags, or both (flags win),
fill in what is missing (type, id, idempotency key, issued_at, expires_at),
compute payload_hash, sign it with the orchestrator's HMAC secret, and print it.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			in, secret, err := f.build(e)
			if err != nil {
				return err
			}
			if err := in.Sign(secret); err != nil {
				return err
			}
			return e.printObject(in)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.key, "key", "", "ID=SECRET_FILE: the orchestrator key that signs")
	fl.StringVar(&f.file, "file", "", "a JSON file with intent fields to start from")
	fl.StringVar(&f.in.ID, "id", "", "intent id (default: random)")
	fl.StringVar(&f.in.Tenant, "tenant", "", "tenant")
	fl.StringVar(&f.in.Principal, "principal", "", "the agent or orchestrator identity policy sees")
	fl.StringVar(&f.in.RunID, "run", "", "run id: the budget scope")
	fl.StringVar(&f.in.Tool, "tool", "", "tool name")
	fl.StringVar(&f.params, "params", "", "params as a JSON object")
	fl.StringVar(&f.paramsFile, "params-file", "", "a file holding the params JSON object")
	fl.StringVar(&f.in.IdempotencyKey, "idempotency-key", "", "idempotency key (default: random)")
	fl.StringVar(&f.context, "context", "", "context handed to policy, as a JSON object")
	fl.StringVar(&f.targetNode, "target-node", "", "run only on this node")
	fl.StringArrayVar(&f.targetLabels, "target-label", nil, "run only on nodes with this label, KEY=VALUE (repeatable)")
	fl.DurationVar(&f.ttl, "ttl", 5*time.Minute, "time until the intent expires")
	f.clock.register(cmd)
	return cmd
}

// build merges the file and the flags into an intent ready to sign.
func (f *intentSignFlags) build(e *env) (*protocol.Intent, []byte, error) {
	if f.key == "" {
		return nil, nil, fmt.Errorf("--key ID=SECRET_FILE is required")
	}
	ref, err := parseKeyRef("key", f.key)
	if err != nil {
		return nil, nil, err
	}
	secret, err := readKeyFile(ref.value)
	if err != nil {
		return nil, nil, err
	}
	in := new(protocol.Intent)
	if f.file != "" {
		b, err := readSmallFile(f.file, protocol.DefaultMaxBytes)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, in, json.RejectUnknownMembers(true)); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", f.file, err)
		}
	}
	for _, s := range []struct {
		dst *string
		v   string
	}{
		{&in.ID, f.in.ID}, {&in.Tenant, f.in.Tenant}, {&in.Principal, f.in.Principal},
		{&in.RunID, f.in.RunID}, {&in.Tool, f.in.Tool}, {&in.IdempotencyKey, f.in.IdempotencyKey},
	} {
		if s.v != "" {
			*s.dst = s.v
		}
	}
	if err := f.jsonFlags(in); err != nil {
		return nil, nil, err
	}
	now, err := f.clock.now(e)
	if err != nil {
		return nil, nil, err
	}
	in.Type = protocol.KindIntent.Type()
	in.KeyID = ref.id
	if in.ID == "" {
		in.ID = randomID("int-")
	}
	if in.IdempotencyKey == "" {
		in.IdempotencyKey = randomID("idem-")
	}
	if in.IssuedAt == "" || f.clock.value != "" {
		in.IssuedAt = protocol.FormatTime(now)
	}
	if in.ExpiresAt == "" || f.clock.value != "" {
		issued, err := protocol.ParseTime(in.IssuedAt)
		if err != nil {
			return nil, nil, err
		}
		in.ExpiresAt = protocol.FormatTime(issued.Add(f.ttl))
	}
	if in.Params == nil {
		in.Params = jsontext.Value(`{}`)
	}
	if err := in.SetPayloadHash(); err != nil {
		return nil, nil, err
	}
	return in, secret, nil
}

func (f *intentSignFlags) jsonFlags(in *protocol.Intent) error {
	params := f.params
	if f.paramsFile != "" {
		if params != "" {
			return fmt.Errorf("give --params or --params-file, not both")
		}
		b, err := readSmallFile(f.paramsFile, protocol.DefaultMaxBytes)
		if err != nil {
			return err
		}
		params = string(b)
	}
	if params != "" {
		in.Params = jsontext.Value(params)
	}
	if f.context != "" {
		in.Context = jsontext.Value(f.context)
	}
	if f.targetNode != "" || len(f.targetLabels) > 0 {
		in.Target = &protocol.Target{Node: f.targetNode}
		for _, l := range f.targetLabels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return fmt.Errorf("--target-label %q: want KEY=VALUE", l)
			}
			if in.Target.Labels == nil {
				in.Target.Labels = map[string]string{}
			}
			in.Target.Labels[k] = v
		}
	}
	return nil
}

// fileKeys are HMAC secrets read from files, for any tenant.
type fileKeys map[string][]byte

func (k fileKeys) IntentKey(_, id string) ([]byte, bool) { s, ok := k[id]; return s, ok }

func newIntentVerify(e *env) *cobra.Command {
	var keys []string
	var clock clockFlag
	var explain bool
	cfg := protocol.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "verify --key ID=SECRET_FILE [--key ...] [--explain] < intent.json",
		Short: "Verify an intent read from standard input",
		Long: `Verify an intent read from standard input as a server would: structure, key,
HMAC signature, payload hash, TTL, clock skew and expiry. Prints one JSON line,
{"valid":true} or {"valid":false,"error":"<code>"}, and exits 0 or 1.
Keys given here may sign for any tenant. --explain first prints what a server
computes: the payload hash input and payload_hash, the exact signing input it
MACs, and the signature it expects from the key named by key_id.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ks := fileKeys{}
			for _, k := range keys {
				ref, err := parseKeyRef("key", k)
				if err != nil {
					return err
				}
				if ks[ref.id], err = readKeyFile(ref.value); err != nil {
					return err
				}
			}
			v, err := verifierFor(e, cfg, clock)
			if err != nil {
				return err
			}
			raw, err := readInput(e.in, cfg.MaxBytes)
			if err != nil {
				return err
			}
			if explain {
				x, err := explainIntent(raw, ks)
				if err != nil {
					return e.report(err)
				}
				if err := e.printExplanation(x); err != nil {
					return err
				}
			}
			_, err = v.VerifyIntent(raw, ks)
			return e.report(err)
		},
	}
	cmd.Flags().StringArrayVar(&keys, "key", nil, "ID=SECRET_FILE: an orchestrator key (repeatable)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print the payload hash input, the signing input and the expected signature first")
	cmd.Flags().DurationVar(&cfg.MaxTTL, "max-ttl", cfg.MaxTTL, "the longest expires_at - issued_at allowed")
	cmd.Flags().DurationVar(&cfg.Skew, "skew", cfg.Skew, "how far in the future issued_at may be")
	cmd.Flags().IntVar(&cfg.MaxBytes, "max-bytes", cfg.MaxBytes, "the largest intent accepted, in bytes")
	clock.register(cmd)
	return cmd
}

// verifierFor builds a Verifier at the --now time.
func verifierFor(e *env, cfg protocol.Config, clock clockFlag) (*protocol.Verifier, error) {
	now, err := clock.now(e)
	if err != nil {
		return nil, err
	}
	cfg.Now = func() time.Time { return now }
	return protocol.NewVerifier(cfg)
}
