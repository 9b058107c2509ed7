//go:build unix && !linux

package wasm

// noReserve is zero: Darwin commits only touched pages without being told.
const noReserve = 0
