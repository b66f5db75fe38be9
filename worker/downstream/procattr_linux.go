package downstream

import "syscall"

// stdioProcAttr puts a stdio server in its own process group and has the
// kernel SIGKILL it when durawait's thread that started it exits, so it
// dies with durawait even on kill -9.
func stdioProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
