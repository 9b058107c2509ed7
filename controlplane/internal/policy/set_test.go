package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		src     string
		want    error
		message string // a substring the error must contain
	}{
		{"syntax error has a position", "@id(\"a\")\npermit (principal, action, resource) when { context.x < };",
			ErrSyntax, "2:"},
		{"unknown function", `@id("a") permit (principal, action, resource) when { foo(1) };`, ErrSyntax, "foo"},
		{"unterminated", `@id("a") permit (principal, action, resource`, ErrSyntax, "1:"},
		{"template slot", `@id("a") permit (principal == ?principal, action, resource);`, ErrSyntax, ""},
		{"repeated annotation", "@id(\"a\")\n@id(\"b\") permit (principal, action, resource);", ErrSyntax, "duplicate annotation"},
		{"missing id", "@id(\"a\") permit (principal, action, resource);\n\n  permit (principal, action, resource);",
			ErrMissingID, "line 3, column 3"},
		{"empty id", `@id("") permit (principal, action, resource);`, ErrBadID, "line 1, column 1"},
		{"id without value", `@id permit (principal, action, resource);`, ErrBadID, ""},
		{"id with a space", `@id("a b") permit (principal, action, resource);`, ErrBadID, ""},
		{"id too long", `@id("` + strings.Repeat("a", 129) + `") permit (principal, action, resource);`, ErrBadID, ""},
		{"duplicate id", "@id(\"a\") permit (principal, action, resource);\n@id(\"a\") forbid (principal, action, resource);",
			ErrDuplicateID, `policy "a" at line 2, column 1`},
		{"approval misspelt", `@id("a") @approval("requried") permit (principal, action, resource);`, ErrBadApproval, `"a"`},
		{"approval without value", `@id("a") @approval permit (principal, action, resource);`, ErrBadApproval, ""},
		{"approval on a forbid", `@id("a") @approval("required") forbid (principal, action, resource);`, ErrBadApproval, ""},
		{"approvals of one", `@id("a") @approvals("1") permit (principal, action, resource);`, ErrBadApprovals, `"a"`},
		{"approvals past the maximum", `@id("a") @approvals("11") permit (principal, action, resource);`, ErrBadApprovals, ""},
		{"approvals not a number", `@id("a") @approvals("two") permit (principal, action, resource);`, ErrBadApprovals, ""},
		{"approvals with a sign", `@id("a") @approvals("+2") permit (principal, action, resource);`, ErrBadApprovals, ""},
		{"approvals on a forbid", `@id("a") @approvals("2") forbid (principal, action, resource);`, ErrBadApprovals, ""},
		{"too large", strings.Repeat(" ", MaxTextBytes+1), ErrTextTooLarge, ""},
		{"parentheses too deep", "@id(\"a\")\npermit (principal, action, resource) when { " + nested("(", ")", MaxNesting) + " };",
			ErrTooNested, "line 2, column 172"},
		{"a megabyte of parentheses", `@id("a") permit (principal, action, resource) when { ` + nested("(", ")", 500000) + ` };`,
			ErrTooNested, ""},
		{"sets too deep", `@id("a") permit (principal, action, resource) when { ` + nested("[", "]", MaxNesting) + `.isEmpty() };`,
			ErrTooNested, ""},
		{"if-then-else too deep", `@id("a") permit (principal, action, resource) when { ` +
			strings.Repeat("if true then ", MaxNesting+1) + "true" + strings.Repeat(" else false", MaxNesting+1) + " };",
			ErrTooNested, ""},
		{"too many unary operators", `@id("a") permit (principal, action, resource) when { ` + strings.Repeat("! ", maxUnary+1) + `true };`,
			ErrTooNested, "more than 8"},
		{"context typo", "@id(\"ok\") permit (principal, action, resource);\n@id(\"a\")\nforbid (principal, action, resource)\nwhen { context.parms.amount > 10 };",
			ErrUnknownAttribute, `policy "a" at line 2, column 1: policy: no such attribute in the Writ entity model: context.parms`},
		{"context typo in has", `@id("a") forbid (principal, action, resource) when { context has parms && context.parms.x };`,
			ErrUnknownAttribute, "context.parms"},
		{"context typo by index", `@id("a") forbid (principal, action, resource) when { context["parms"] == {} };`,
			ErrUnknownAttribute, "context.parms"},
		{"principal typo", `@id("a") permit (principal, action, resource) when { principal.tenat == "acme" };`,
			ErrUnknownAttribute, "principal.tenat"},
		{"resource typo deep inside", `@id("a") permit (principal, action, resource) unless {
			if context.node == "" then [1, resource.capabilites.contains("x")].isEmpty() else false };`,
			ErrUnknownAttribute, "resource.capabilites"},
		{"action has no attributes", `@id("a") permit (principal, action, resource) when { action.name == "invoke" };`,
			ErrUnknownAttribute, "action.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.src))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got error %v, want %v", err, tc.want)
			}
			if s != nil {
				t.Errorf("got a set beside error %v, want nil", err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("got error %q, want it to contain %q", err, tc.message)
			}
			var pe *PolicyError
			wholeText := tc.want == ErrSyntax || tc.want == ErrTextTooLarge || tc.want == ErrTooNested
			if isPolicyErr := errors.As(err, &pe); isPolicyErr == wholeText {
				t.Errorf("got *PolicyError=%v for %v, want a *PolicyError exactly for per-policy errors", isPolicyErr, err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	src := `// comment
@id("b") @description("anything else is kept and ignored")
permit (principal, action, resource);
@id("a.1:x-y_z") @approval("required") permit (principal, action, resource);`
	s := mustParse(t, src)
	if got, want := s.IDs(), []string{"a.1:x-y_z", "b"}; !slices.Equal(got, want) {
		t.Errorf("got ids %q, want %q", got, want)
	}
	if s.Text() != src {
		t.Errorf("got text %q, want the source unchanged", s.Text())
	}
	sum := sha256.Sum256([]byte(src))
	if got, want := s.Hash(), "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("got hash %s, want %s", got, want)
	}
	if s.approval["a.1:x-y_z"] != 1 || s.approval["b"] != 0 {
		t.Errorf("got approval map %v, want only a.1:x-y_z", s.approval)
	}
	mustParse(t, `@id("members") permit (principal, action, resource) when {
		principal has tenant && principal.name == context.principal && context.decision == "approve" &&
		resource.name == "" && resource.tenant == "" && resource.sandbox == "" && !resource.requires_approval &&
		resource.capabilities == context.capabilities && context.intent_id == "" && context.tenant == "" &&
		context.run_id == "" && context.channel == "" && context.device == "" && context.node == "" &&
		context.labels has site && context.intent_context.any.depth == 1 &&
		context.params has anything && context.params.anything.at.all == 1 && {a: 1}.a == 1 };`)
	empty := mustParse(t, "")
	if len(empty.IDs()) != 0 {
		t.Errorf("got ids %q for empty text, want none", empty.IDs())
	}
}

// nested is depth+1 levels of open and close around true.
func nested(open, close string, depth int) string {
	return strings.Repeat(open, depth+1) + "true" + strings.Repeat(close, depth+1)
}

func TestNestingLimitsOnlyWhatNests(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		nested("(", ")", MaxNesting-2), // with the braces of when { }
		strings.Repeat("if true then ", MaxNesting-1) + "true" + strings.Repeat(" else false", MaxNesting-1),
		strings.Repeat("! ", maxUnary) + "true",
		`context.params.s == "` + strings.Repeat(`((([[[{{{\"`, 100) + `"`,
		`context.params.iffy == 1 && context.params.elsewhere == 2 && context.params["if"] == 3`,
		"1 - -1 == 2 && " + strings.Repeat("true && ", 10000) + "true",
		"true // " + strings.Repeat("(", 1000) + "\n && true",
	} {
		src := `@id("a") permit (principal, action, resource) when { ` + body + ` };`
		if _, err := Parse([]byte(src)); err != nil {
			t.Errorf("got error %v for %.80q…, want none", err, body)
		}
	}
}

func TestHashIsOfTheExactText(t *testing.T) {
	t.Parallel()
	a := mustParse(t, `@id("a") permit (principal, action, resource);`)
	again := mustParse(t, `@id("a") permit (principal, action, resource);`)
	reformatted := mustParse(t, "@id(\"a\")\npermit (\n  principal,\n  action,\n  resource\n);")
	if a.Hash() != again.Hash() {
		t.Errorf("got hashes %s and %s for the same text, want equal", a.Hash(), again.Hash())
	}
	if a.Hash() == reformatted.Hash() {
		t.Errorf("got hash %s for reformatted text too, want a different hash", a.Hash())
	}
}

func TestDevPolicy(t *testing.T) {
	t.Parallel()
	s := mustParse(t, DevPolicy)
	approvalTool := Tool{Name: "echo_approval"}
	manifest := Tool{Name: "deploy", RequiresApproval: true}
	for _, tc := range []struct {
		name string
		got  Decision
		want want
	}{
		{"dev invokes echo", invoke(t, s, intent(`{}`, tenant("dev")), echoTool()),
			want{allow: true, policies: []string{"dev.invoke"}}},
		{"dev invokes echo_approval", invoke(t, s, intent(`{}`, tenant("dev"), onTool("echo_approval")), approvalTool),
			want{allow: true, approval: true, policies: []string{"dev.invoke", "dev.invoke.approval"}}},
		{"manifest requires approval", invoke(t, s, intent(`{}`, tenant("dev"), onTool("deploy")), manifest),
			want{allow: true, approval: true, policies: []string{"dev.invoke", "dev.invoke.approval"}}},
		{"other tenant", invoke(t, s, intent(`{}`), echoTool()), want{}},
		{"approve by another", approve(t, s, intent(`{}`, tenant("dev")), "alice"),
			want{allow: true, policies: []string{"dev.approve"}}},
		{"self-approval", approve(t, s, intent(`{}`, tenant("dev"), principal("alice")), "alice"),
			want{policies: []string{"dev.approve.not-self"}}},
		{"approve in another tenant", approve(t, s, intent(`{}`), "alice"), want{}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.got, tc.want) })
	}
}
