package callevents

import (
	"fmt"
	"testing"
)

// BenchmarkPublish measures what a tool call pays per event: with no
// subscriber, and with subscribers that read everything or never read
// (their full buffers drop and count).
func BenchmarkPublish(b *testing.B) {
	for _, tc := range []struct {
		name          string
		readers, full int
	}{{"none", 0, 0}, {"10-readers", 10, 0}, {"10-full", 0, 10}} {
		b.Run(tc.name, func(b *testing.B) {
			h := NewHub(0)
			for i := 0; i < tc.full; i++ {
				_, end := h.Subscribe(Filter{AllPrincipals: true})
				defer end()
			}
			for i := 0; i < tc.readers; i++ {
				sub, end := h.Subscribe(Filter{AllPrincipals: true})
				done := make(chan struct{})
				go func() {
					for {
						select {
						case <-sub.Events():
						case <-done:
							return
						}
					}
				}()
				defer func() { close(done); end() }()
			}
			ev := Event{Type: TypeProgress, Tool: "wait_for", CallID: "call-1", WaitID: "wait_for/abc", Message: fmt.Sprint("sample 1")}
			b.ResetTimer()
			for b.Loop() {
				h.Publish(ev)
			}
		})
	}
}
