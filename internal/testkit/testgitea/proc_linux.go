package testgitea

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group, with the git
// processes it spawns, and has the kernel kill it when the test binary
// dies without calling Stop.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// kill ends the server's process group.
func kill(cmd *exec.Cmd) {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		_ = cmd.Process.Kill()
	}
}
