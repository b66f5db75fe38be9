//go:build !linux

package tmuxwatch

import "syscall"

// controlClientProcAttr puts a tmux control client in its own process
// group. Systems other than Linux have no parent-death signal: durawait
// detaches the client when the last watch of its session ends (Hub) and
// on shutdown (Hub.Close). The gap: after a kill -9 of
// durawait the client is not killed; it exits once it reads end of file on
// its stdin (the kernel closes the pipe when durawait dies), which a tmux
// control client does at once.
func controlClientProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
