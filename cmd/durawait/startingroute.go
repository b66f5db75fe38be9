package main

import (
	"net/http"
	"sync/atomic"
)

// startingRoute is a route of the front end that exists from the moment
// the listener does: until its handler is set it answers 503 with
// Retry-After, so a client that connects while durawait starts is told to
// come back shortly, not that no MCP server is here (a 404, which MCP
// clients read as "a legacy SSE server").
type startingRoute struct{ h atomic.Pointer[http.Handler] }

func (r *startingRoute) set(h http.Handler) { r.h.Store(&h) }

func (r *startingRoute) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h := r.h.Load(); h != nil {
		(*h).ServeHTTP(w, req)
		return
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, "durawait is starting; call again in a moment", http.StatusServiceUnavailable)
}
