//go:build !linux

package main

// spreadSubfolders does nothing off Linux (see spread_linux_test.go).
func spreadSubfolders(string) {}
