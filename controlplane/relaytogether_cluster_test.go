package controlplane_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestRelayTogether: a follower may relay a run's output and its result to
// the leader in one request, which the leader proposes as one entry and
// answers with both results in order; anything else in that form — another
// command, one or three commands, a group inside it — is refused whole
// (400 malformed) and changes nothing.
func TestRelayTogether(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	controlplane.SetRaftTimeouts(&base, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, t.TempDir(), 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range lc.Servers {
			s.Close(context.Background())
		}
	}()
	leader, followers := clusterRoles(ctx, t, lc.Servers)
	post := func(body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "https://"+leader.Addr().String()+"/v1/internal/apply", strings.NewReader(body))
		resp, err := controlplane.PeerClient(followers[0]).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	session := protocol.HashBytes([]byte("together"))
	open := fmt.Sprintf(`{"type":50,"cmd":{"hash":%q,"user":"admin-token","expires_at":"2099-01-01T00:00:00Z"}}`, session)
	output, result := `{"type":37,"cmd":{}}`, `{"type":36,"cmd":{}}`
	for name, body := range map[string]string{
		"another command":        `{"type":20,"together":[` + open + `,` + result + `]}`,
		"one command":            `{"type":20,"together":[` + output + `]}`,
		"three commands":         `{"type":20,"together":[` + output + `,` + output + `,` + result + `]}`,
		"a group inside":         `{"type":20,"together":[{"type":20,"together":[` + output + `,` + result + `]},` + result + `]}`,
		"together on one":        `{"type":36,"cmd":{},"together":[` + output + `,` + result + `]}`,
		"a command not decoding": `{"type":20,"together":[{"type":37,"cmd":[1]},` + result + `]}`,
		"the result first":       `{"type":20,"together":[` + result + `,` + output + `]}`,
		"two results":            `{"type":20,"together":[` + result + `,` + result + `]}`,
		"two dispatches":         `{"type":20,"together":[{"type":37,"cmd":{"dispatch_id":"d1"}},{"type":36,"cmd":{"dispatch_id":"d2"}}]}`,
		"two nodes":              `{"type":20,"together":[{"type":37,"cmd":{"node":"n1"}},{"type":36,"cmd":{"node":"n2"}}]}`,
	} {
		if code, b := post(body); code != http.StatusBadRequest || !strings.Contains(string(b), string(protocol.CodeMalformed)) {
			t.Errorf("%s: HTTP %d %s, want 400 malformed", name, code, b)
		}
	}
	if controlplane.HasDashboardSession(leader, session) {
		t.Fatal("a command relayed together with a result was applied")
	}
	// Output and result of a dispatch no one made: both proposed, each
	// answered (refused by the FSM) in order.
	code, b := post(`{"type":20,"together":[` + output + `,` + result + `]}`)
	var a struct {
		Together []struct {
			Err *struct {
				Code string `json:"code"`
			}
		} `json:"together"`
	}
	if code != http.StatusOK || jsonx.UnmarshalLenient(b, &a) != nil || len(a.Together) != 2 || a.Together[0].Err == nil || a.Together[1].Err == nil {
		t.Fatalf("output and result together: HTTP %d %s, want two results, each refused", code, b)
	}
}
