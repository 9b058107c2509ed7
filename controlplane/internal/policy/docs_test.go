package policy

import (
	"os"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

// docBlocks returns the cedar code blocks of docs/policy.md.
func docBlocks(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(raw), "```cedar\n")[1:] {
		end := strings.Index(part, "```")
		if end < 0 {
			t.Fatalf("unterminated cedar block: %.40q", part)
		}
		blocks = append(blocks, part[:end])
	}
	if len(blocks) != 2 {
		t.Fatalf("got %d cedar blocks in docs/policy.md, want 2 (dev, production)", len(blocks))
	}
	return blocks
}

// withoutComments drops comment and blank lines, to compare policy texts.
func withoutComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "//") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestDocsDevPolicyIsDevPolicy(t *testing.T) {
	t.Parallel()
	doc := docBlocks(t)[0]
	mustParse(t, doc)
	if got, want := withoutComments(doc), withoutComments(DevPolicy); got != want {
		t.Errorf("docs/policy.md dev policy:\n%s\nwant DevPolicy:\n%s", got, want)
	}
}

func TestDocsProductionPolicy(t *testing.T) {
	t.Parallel()
	s := mustParse(t, docBlocks(t)[1])
	fetch := func(sandbox string) Tool {
		return Tool{Name: "fetch", Capabilities: []string{"network"}, Sandbox: sandbox}
	}
	shell := Tool{Name: "shell", Capabilities: []string{"exec"}, Sandbox: "bwrap"}
	pay := Tool{Name: "pay", Sandbox: "process"}
	mail := Tool{Name: "send_mail", Capabilities: []string{"network"}, Sandbox: "wasm"}
	deploy := Tool{Name: "deploy", RequiresApproval: true}
	on := func(tool Tool, params string, opts ...func(*protocol.Intent)) Decision {
		return invoke(t, s, intent(params, append(opts, onTool(tool.Name))...), tool)
	}
	decide := func(tool Tool, params, author, approver, decision string) Decision {
		in := intent(params, onTool(tool.Name), principal(author))
		req, err := NewApproveRequest(in, approval(in, approver, decision), tool)
		if err != nil {
			t.Fatal(err)
		}
		return s.Approve(req)
	}
	for _, tc := range []struct {
		name string
		got  Decision
		want want
	}{
		{"acme agent, global tool", on(echoTool(), `{}`), want{allow: true, policies: []string{"acme.invoke"}}},
		{"other tenant", on(echoTool(), `{}`, tenant("globex")), want{}},
		{"network in process tier", on(fetch("process"), `{}`), want{policies: []string{"acme.network.sandboxed"}}},
		{"network in bwrap", on(fetch("bwrap"), `{}`), want{allow: true, policies: []string{"acme.invoke"}}},
		{"exec from slack", on(shell, `{}`, withContext(`{"channel":"slack"}`)), want{policies: []string{"acme.exec.console-only"}}},
		{"exec from the console", on(shell, `{}`, withContext(`{"channel":"ops-console"}`)),
			want{allow: true, policies: []string{"acme.invoke"}}},
		{"small payment", on(pay, `{"amount_cents": 100}`), want{allow: true, policies: []string{"acme.invoke"}}},
		{"payment needing approval", on(pay, `{"amount_cents": 60000}`),
			want{allow: true, approval: true, policies: []string{"acme.invoke", "acme.pay.approval"}}},
		{"payment over the limit", on(pay, `{"amount_cents": 2000000}`), want{policies: []string{"acme.pay.limit"}}},
		{"payment without an amount", on(pay, `{}`), want{policies: []string{"acme.pay.approval", "acme.pay.limit"}, errors: true}},
		{"mail to the allowlist", on(mail, `{"to": ["ops@acme.example"]}`), want{allow: true, policies: []string{"acme.invoke"}}},
		{"mail outside the allowlist", on(mail, `{"to": ["ops@acme.example", "x@evil.example"]}`),
			want{policies: []string{"acme.mail.allowlist"}}},
		{"manifest requires approval", on(deploy, `{}`),
			want{allow: true, approval: true, policies: []string{"acme.invoke", "acme.manifest.approval"}}},
		{"alice approves", decide(echoTool(), `{}`, "bot", "alice", "approve"), want{allow: true, policies: []string{"acme.approvers"}}},
		{"alice approves her own", decide(echoTool(), `{}`, "alice", "alice", "approve"),
			want{policies: []string{"acme.approve.not-self"}}},
		{"dave is no approver", decide(echoTool(), `{}`, "bot", "dave", "deny"), want{}},
		{"alice approves a payment", decide(pay, `{"amount_cents": 60000}`, "bot", "alice", "approve"),
			want{policies: []string{"acme.approve.pay.carol"}}},
		{"alice denies a payment", decide(pay, `{"amount_cents": 60000}`, "bot", "alice", "deny"),
			want{allow: true, policies: []string{"acme.approvers"}}},
		{"carol approves a payment", decide(pay, `{"amount_cents": 60000}`, "bot", "carol", "approve"),
			want{allow: true, policies: []string{"acme.approvers"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.got, tc.want) })
	}
}
