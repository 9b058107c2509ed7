// Package sandbox is the place where a tool actually runs, contained.
//
// It defines one small [Driver] contract that every isolation tier implements
// (wasm, gvisor, bwrap, runc, process), the tool [Manifest] those tiers read, and the
// [Outcome] they report. The tiers live in sub-packages; the conformance suite
// every tier passes is in sandbox/sandboxtest.
//
// Two rules hold for every tier. A tier that cannot give the isolation asked
// for refuses (status "refused"): nothing ever falls back to a weaker tier.
// And no shell is ever involved: parameters reach a tool as JSON on stdin or
// as whole argv elements from the manifest's template.
package sandbox
