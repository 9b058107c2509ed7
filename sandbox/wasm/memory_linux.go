package wasm

import "golang.org/x/sys/unix"

// noReserve maps a memory's maximum without reserving swap for it: only
// touched pages are ever committed.
const noReserve = unix.MAP_NORESERVE
