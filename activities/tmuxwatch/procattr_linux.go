package tmuxwatch

import "syscall"

// controlClientProcAttr has the kernel SIGKILL a tmux control client when
// durawait's thread that started it exits, so no client is left attached
// even after a kill -9 of durawait.
func controlClientProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
