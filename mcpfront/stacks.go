package mcpfront

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// offStack runs fn on a goroutine of its own and returns when it has
// returned (a panic of fn's goes on in the caller, with fn's stack in its
// message; fn's runtime.Goexit ends the caller too).
//
// A wait's call blocks for up to minutes on the transport's goroutine,
// about 16 KiB deep (net/http, OTel, mcp-go's large frames, then the
// handler's), and a goroutine keeps the stack it grew for as long as it
// blocks that deep: the runtime halves a stack at a collection only when
// less than a quarter of it is in use. One Temporal call on that goroutine
// (gRPC, the SDK's interceptors) grew its stack from 32 to 64 KiB, which
// then stayed for the whole wait: the most of a wait's memory
// (docs/performance.md). A handler makes such calls before it blocks
// through offStack, whose goroutine ends with them.
func offStack(fn func()) {
	var (
		returned bool
		panicked any
		trace    []byte
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if !returned {
				if panicked = recover(); panicked != nil {
					trace = debug.Stack()
				}
			}
		}()
		fn()
		returned = true
	}()
	<-done
	switch {
	case returned:
	case panicked != nil:
		panic(fmt.Sprintf("%v\n\n(on offStack's goroutine)\n%s", panicked, trace))
	default:
		runtime.Goexit() // fn's goroutine exited (a test's FailNow): so does the caller
	}
}
