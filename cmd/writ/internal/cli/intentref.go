package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// intentRef reads the id and tenant of the signed intent in file, so that
// the commands that read an intent back can name it by the file it was
// signed into (--intent intent.json) rather than by an id copied by hand.
func intentRef(file string) (id, tenant string, err error) {
	b, err := readSmallFile(file, protocol.DefaultMaxBytes)
	if err != nil {
		return "", "", err
	}
	var in struct {
		ID     string `json:"id"`
		Tenant string `json:"tenant"`
	}
	if err := json.Unmarshal(b, &in); err != nil || in.ID == "" {
		return "", "", fmt.Errorf("--intent %s: not a signed intent (no id)", file)
	}
	return in.ID, in.Tenant, nil
}

// intentArg resolves the intent a read names: the ID argument, or the file
// of --intent (whose tenant is the default of --tenant).
func intentArg(args []string, file string, tenant *string) (string, error) {
	switch {
	case len(args) == 1 && file != "":
		return "", errors.New("give the intent's ID or --intent FILE, not both")
	case len(args) == 1:
		return args[0], nil
	case file == "":
		return "", errors.New("name the intent: its ID, or --intent FILE (the signed intent)")
	}
	id, t, err := intentRef(file)
	if err == nil && *tenant == "" {
		*tenant = t
	}
	return id, err
}

// receiptOf waits up to wait for the intent's receipt index, then fetches
// the receipt, retrying while no checkpoint covers it yet (the leader signs
// one within a moment of appending it).
func receiptOf(ctx context.Context, c *client.Client, id string, wait time.Duration) (json.RawMessage, error) {
	r, err := c.Intent(ctx, id, wait)
	if err != nil {
		return nil, err
	}
	if r.ReceiptIndex == nil {
		return nil, fmt.Errorf("intent %s is %s and has no receipt yet", id, r.State)
	}
	deadline := time.Now().Add(max(wait, 5*time.Second))
	for {
		body, err := c.Receipt(ctx, *r.ReceiptIndex)
		var ae *client.Error
		if err == nil || !errors.As(err, &ae) || ae.Code != "not_found" || time.Now().After(deadline) {
			return body, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// intentReader is the flags of a command about one intent of a tenant: the
// intent (ID or --intent FILE) and how the request is signed (--tenant and
// --key, or a token).
type intentReader struct {
	server, key, tenant, intentFile string
	token                           secretFlag
}

// register adds the flags; signs says what the key signs ("the read").
func (r *intentReader) register(fs *pflag.FlagSet, signs string) {
	fs.StringVar(&r.server, "server", defaultServer(), "the control plane's API address")
	fs.StringVar(&r.tenant, "tenant", "", "the intent's tenant (default: --intent's)")
	fs.StringVar(&r.key, "key", "", "ID=SECRET_FILE: an orchestrator key of the tenant, to sign "+signs)
	fs.StringVar(&r.intentFile, "intent", "", "the signed intent's file, instead of its ID")
	r.token.register(fs)
}

// client returns the intent's id and a client that signs as the flags say.
func (r *intentReader) client(e *env, args []string) (string, *client.Client, error) {
	id, err := intentArg(args, r.intentFile, &r.tenant)
	if err != nil {
		return "", nil, err
	}
	token, err := r.token.get(e)
	if err != nil {
		return "", nil, err
	}
	c, err := e.readClient(r.server, token, r.tenant, r.key)
	return id, c, err
}
