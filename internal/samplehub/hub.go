// Package samplehub passes the samples of running waits from the probe
// loops to the MCP calls waiting on them, inside one process, so that those
// calls can send progress notifications.
package samplehub

import (
	"sync"

	"github.com/durawait/durawait/workflows"
)

// Hub fans samples out to subscribers by workflow ID. The zero value is not
// usable; call New.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[chan workflows.Sample]struct{}
}

// New returns an empty hub.
func New() *Hub {
	return &Hub{subs: map[string]map[chan workflows.Sample]struct{}{}}
}

// subscriberBuffer is how many samples a slow subscriber may fall behind
// before samples are dropped for it.
const subscriberBuffer = 16

// ObserveSample implements activities.SampleObserver. It never blocks: a
// subscriber whose buffer is full misses the sample.
func (h *Hub) ObserveSample(workflowID string, s workflows.Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[workflowID] {
		select {
		case ch <- s:
		default:
		}
	}
}

// Subscribe returns the samples of workflowID from now on, and a function
// that ends the subscription and closes the channel.
func (h *Hub) Subscribe(workflowID string) (<-chan workflows.Sample, func()) {
	ch := make(chan workflows.Sample, subscriberBuffer)
	h.mu.Lock()
	if h.subs[workflowID] == nil {
		h.subs[workflowID] = map[chan workflows.Sample]struct{}{}
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
