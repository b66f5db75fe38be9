package main

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// startingHold bounds how long a request that arrives while durawait starts
// waits for the front end before it is answered 503. It is well above what
// a start-up takes (1.4 s at p50 and 3.3 s at most in the soak, with 200
// waits in flight) and well below MCP clients' request timeouts (the
// TypeScript SDK's default is 60 s).
const startingHold = 15 * time.Second

// startingHoldWithin is the hold of a server whose read timeout (headers
// and body, from the request's first byte) is readTimeout: startingHold,
// or half the read timeout when that is shorter, so that a held request's
// body can still be read after its hold.
func startingHoldWithin(readTimeout time.Duration) time.Duration {
	return min(startingHold, readTimeout/2)
}

// startingRoute is a route of the front end that exists from the moment
// the listener does. A request that arrives before its handler is set
// waits for it, up to its hold (startingHoldWithin): a client that connects while durawait
// starts is then served as soon as it is ready. This matters for the
// 2026-07-28 protocol, whose clients fall back to the legacy initialize
// handshake (2025-11-25) on any error of their first request,
// server/discover; a 503 there followed by a served initialize would leave
// a client of the newest era in a session of the older one. A request that
// outwaits the hold, or that arrives once the start is given up, is
// answered 503 with Retry-After, so it is told to come back shortly, not
// that no MCP server is here (a 404, which MCP clients read as "a legacy
// SSE server").
type startingRoute struct {
	h atomic.Pointer[http.Handler]
	// hold is how long a request waits for the handler; 0 means
	// startingHold.
	hold time.Duration

	initOnce, settleOnce sync.Once
	// settled is closed once the handler is set or the start given up.
	settled chan struct{}
}

// set puts the route's handler in place and serves the requests waiting
// for it.
func (r *startingRoute) set(h http.Handler) {
	r.h.Store(&h)
	r.settle()
}

// abandon answers the requests waiting for the handler, and later ones
// until it is set, 503 at once: the start failed or the process stops.
func (r *startingRoute) abandon() { r.settle() }

func (r *startingRoute) settle() {
	ch := r.settledChan()
	r.settleOnce.Do(func() { close(ch) })
}

func (r *startingRoute) settledChan() chan struct{} {
	r.initOnce.Do(func() { r.settled = make(chan struct{}) })
	return r.settled
}

func (r *startingRoute) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h := r.h.Load(); h != nil {
		(*h).ServeHTTP(w, req)
		return
	}
	hold := r.hold
	if hold <= 0 {
		hold = startingHold
	}
	timer := time.NewTimer(hold)
	defer timer.Stop()
	select {
	case <-r.settledChan():
		if h := r.h.Load(); h != nil {
			(*h).ServeHTTP(w, req)
			return
		}
	case <-timer.C:
	case <-req.Context().Done():
		// The client went away (seen at once on a GET; on a POST, whose
		// body is unread, only when the hold ends or the handler is set).
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, "durawait is starting; call again in a moment", http.StatusServiceUnavailable)
}
