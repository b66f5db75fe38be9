//go:build unix

package localprobes

import "syscall"

// nonBlock opens a file without blocking on a FIFO with no writer.
const nonBlock = syscall.O_NONBLOCK
