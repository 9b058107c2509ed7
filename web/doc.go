// Package web is the dashboard served by writ server under /ui/: fleet, the live
// approval queue signed in the browser, intents, receipts and checkpoints.
package web
