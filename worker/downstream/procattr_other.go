//go:build !linux

package downstream

import "syscall"

// stdioProcAttr puts a stdio server in its own process group. Systems other
// than Linux have no parent-death signal: durawait stops the server when it
// closes the connection (on shutdown and on a reconnect: stdin closed, then
// SIGTERM, then SIGKILL). The gap: after a kill -9 of durawait the server
// outlives it, unless it exits when its stdin reaches end of file (which
// the kernel delivers when durawait dies, and which a stdio MCP server is
// expected to treat as the end of the session).
func stdioProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
