// Package faults is Writ's fault-injection suite, in the style of Jepsen:
// three `writ server` processes and two `writ agent` processes, each in its
// own network namespace joined by veth pairs to a bridge, under a load of
// concurrent submitters with idempotency keys, while a nemesis kills,
// pauses, partitions and restarts them; after each fault a checker proves
// that nothing ran twice, nothing was lost, every receipt is there once and
// every server holds the same ledger. It runs as the test TestFaults (a
// short run in `make test`, the long run with WRIT_FAULTS=long in
// `make faults`); docs/reliability.md describes it.
package faults
