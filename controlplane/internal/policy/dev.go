package policy

// DevPolicy is the permissive policy set `writ dev` installs. It lets every
// principal of tenant "dev" invoke every tool, asks for approval of the tool
// echo_approval and of any tool whose manifest requires it, and lets any
// approver of tenant "dev" other than the intent's own principal decide. It
// is for a laptop, never for a cluster; docs/policy.md has a production
// example.
const DevPolicy = `// writ dev: permissive, for local development only.

@id("dev.invoke")
permit (principal, action == Writ::Action::"invoke", resource)
when { principal.tenant == "dev" };

// A second, satisfied permit that carries @approval makes the allow wait for
// an approval.
@id("dev.invoke.approval")
@approval("required")
permit (principal, action == Writ::Action::"invoke", resource)
when {
  principal.tenant == "dev" &&
  (resource.name == "echo_approval" || resource.requires_approval)
};

@id("dev.approve")
permit (principal, action == Writ::Action::"approve", resource)
when { principal.tenant == "dev" && context.tenant == "dev" };

// The protocol already refuses self-approval; the policy says it too.
@id("dev.approve.not-self")
forbid (principal, action == Writ::Action::"approve", resource)
when { context.principal == principal.name };
`
