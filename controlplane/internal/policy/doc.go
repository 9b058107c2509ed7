// Package policy authorizes intents and approvals with Cedar: it parses a
// policy set whose every policy is named by an @id annotation, maps an intent,
// its tool and an approval onto the Writ entity model, and turns Cedar's answer
// into a Decision that names its determining policies and fails closed on any
// evaluation error.
//
// The entity model and the JSON → Cedar value mapping are documented in
// docs/policy.md; the constants in entity.go are the names used there.
package policy
