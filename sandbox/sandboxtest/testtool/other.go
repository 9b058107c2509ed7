//go:build !linux

package main

func platformOp(p params) bool { return false }
