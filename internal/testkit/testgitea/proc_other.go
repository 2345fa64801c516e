//go:build !linux

package testgitea

import "os/exec"

// setProcAttr does nothing where the kernel cannot tie the server's life to
// the test binary's.
func setProcAttr(*exec.Cmd) {}

// kill ends the server.
func kill(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
