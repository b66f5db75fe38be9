// Package samplehub passes what running waits observe (workflows.WaitEvent:
// each sample, and the outcome the moment it is known) from the activities
// to the MCP calls waiting on them, inside one process. The calls use it
// for progress notifications and to answer without waiting for Temporal's
// round trip; the workflow records the same outcome durably.
package samplehub

import (
	"sync"

	"github.com/durawait/durawait/workflows"
)

// Hub fans events out to subscribers by workflow ID. The zero value is not
// usable; call New.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[chan workflows.WaitEvent]struct{}
}

// New returns an empty hub.
func New() *Hub {
	return &Hub{subs: map[string]map[chan workflows.WaitEvent]struct{}{}}
}

// subscriberBuffer is how many events a slow subscriber may fall behind
// before events are dropped for it.
const subscriberBuffer = 16

// Observe implements activities.Observer. It never blocks: a subscriber whose
// buffer is full misses the event.
func (h *Hub) Observe(workflowID string, event workflows.WaitEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[workflowID] {
		select {
		case ch <- event:
		default:
		}
	}
}

// Subscribe returns the events of workflowID from now on, and a function
// that ends the subscription and closes the channel.
func (h *Hub) Subscribe(workflowID string) (<-chan workflows.WaitEvent, func()) {
	ch := make(chan workflows.WaitEvent, subscriberBuffer)
	h.mu.Lock()
	if h.subs[workflowID] == nil {
		h.subs[workflowID] = map[chan workflows.WaitEvent]struct{}{}
	}
	h.subs[workflowID][ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.subs[workflowID], ch)
			if len(h.subs[workflowID]) == 0 {
				delete(h.subs, workflowID)
			}
			close(ch)
		})
	}
}
