package callevents

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBuffer is how many events a subscriber may fall behind before the
// hub drops events for it.
const DefaultBuffer = 256

// Filter selects the events a subscriber receives.
type Filter struct {
	// Tools, when not empty, keeps only the events of these tools.
	Tools map[string]bool
	// AllPrincipals receives every caller's events; otherwise only those
	// whose Owner equals Principal ("" is the local user).
	AllPrincipals bool
	Principal     string
}

// Match reports whether ev passes the filter.
func (f Filter) Match(ev Event) bool {
	if len(f.Tools) > 0 && !f.Tools[ev.Tool] {
		return false
	}
	return f.AllPrincipals || ev.Owner == f.Principal
}

// Hub fans tool-call events out to subscribers. Publish never blocks: a
// subscriber whose buffer is full misses the event, and the miss is
// counted (see Subscription.Dropped). The zero value is not usable; call
// NewHub.
type Hub struct {
	buffer int
	now    func() time.Time
	seq    atomic.Uint64

	mu   sync.Mutex
	subs map[*Subscription]struct{}
	// total and perKey cap the subscribers that Join admits (0: no cap);
	// keys counts Join's subscribers by key.
	total, perKey int
	keys          map[string]int
}

// The caps of Join's subscribers of a hub from NewHub, until SetLimits.
const (
	// DefaultMaxSubscribers caps the subscribers of a process.
	DefaultMaxSubscribers = 256
	// DefaultMaxSubscribersPerKey caps one principal's subscribers.
	DefaultMaxSubscribersPerKey = 16
)

// ErrTooManySubscribers is Join's answer when a cap is reached.
var ErrTooManySubscribers = errors.New("too many event subscribers")

// NewHub returns a hub whose subscribers each buffer up to buffer events
// (DefaultBuffer when buffer < 1).
func NewHub(buffer int) *Hub {
	if buffer < 1 {
		buffer = DefaultBuffer
	}
	return &Hub{buffer: buffer, now: time.Now, subs: map[*Subscription]struct{}{},
		total: DefaultMaxSubscribers, perKey: DefaultMaxSubscribersPerKey, keys: map[string]int{}}
}

// SetLimits sets the caps of Join: at most total subscribers, and at most
// perKey with one key; 0 or less is no cap.
func (h *Hub) SetLimits(total, perKey int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total, h.perKey = total, perKey
}

// Join subscribes as Subscribe does, within the caps (see SetLimits): key
// names who subscribes (a principal). At a cap it returns an error that
// wraps ErrTooManySubscribers and says which cap.
func (h *Hub) Join(filter Filter, key string) (*Subscription, func(), error) {
	return h.join(filter, key, true)
}

// join adds a subscriber; capped applies the caps of SetLimits.
func (h *Hub) join(filter Filter, key string, capped bool) (*Subscription, func(), error) {
	h.mu.Lock()
	switch {
	case !capped:
	case h.total > 0 && len(h.subs) >= h.total:
		h.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: this process has %d, its limit", ErrTooManySubscribers, h.total)
	case h.perKey > 0 && h.keys[key] >= h.perKey:
		h.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: this caller has %d, its limit", ErrTooManySubscribers, h.perKey)
	}
	h.keys[key]++
	s := &Subscription{filter: filter, events: make(chan Event, h.buffer)}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return s, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, s)
			if h.keys[key]--; h.keys[key] <= 0 {
				delete(h.keys, key)
			}
			h.mu.Unlock()
		})
	}, nil
}

// Subscription is one subscriber's view of the hub.
type Subscription struct {
	filter  Filter
	events  chan Event
	dropped atomic.Int64
}

// Events delivers the subscriber's events in the order they were published.
func (s *Subscription) Events() <-chan Event { return s.events }

// TakeDropped returns how many events were dropped for this subscriber
// since the last call, and resets the count.
func (s *Subscription) TakeDropped() int64 { return s.dropped.Swap(0) }

// Publish stamps ev with the next sequence number and the time (when not
// set) and hands it to every subscriber whose filter it passes. It never
// blocks.
func (h *Hub) Publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = h.now().UTC()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Numbered under the lock, so every subscriber sees increasing IDs.
	ev.Seq = h.seq.Add(1)
	for s := range h.subs {
		if !s.filter.Match(ev) {
			continue
		}
		select {
		case s.events <- ev:
		default:
			s.dropped.Add(1)
		}
	}
}

// Subscribe adds a subscriber with filter, outside the caps of Join; the
// returned function removes it (the Events channel is not closed: stop
// reading when you unsubscribe).
func (h *Hub) Subscribe(filter Filter) (*Subscription, func()) {
	s, end, _ := h.join(filter, "", false)
	return s, end
}

// Subscribers counts the current subscribers.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
