package main

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// healthState answers /healthz: 503 while starting, then 200 with a short
// status report.
type healthState struct {
	ready  atomic.Bool
	engine string
	// downstream reports each downstream server's state; nil reports none.
	downstream func() map[string]string
}

func (h *healthState) setReady(engine string, downstream func() map[string]string) {
	h.engine = engine
	h.downstream = downstream
	h.ready.Store(true)
}

func (h *healthState) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if !h.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"starting"}` + "\n"))
		return
	}
	servers := map[string]string{}
	if h.downstream != nil {
		servers = h.downstream()
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "ok", "temporal": h.engine, "downstream": servers,
	})
}
