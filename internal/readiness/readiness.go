// Package readiness answers /readyz: whether a durawait process can do its
// work now. It runs a list of named checks (the Temporal connection, a
// worker polling the task queue), each bounded by a short timeout, and
// answers 200 with every check's result when all pass, 503 naming what
// failed otherwise. /healthz stays a liveness check (see cmd/durawait).
package readiness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Check is one named readiness check; Run returns a short description of
// what it found, or why the process is not ready.
type Check struct {
	Name string
	Run  func(ctx context.Context) (string, error)
}

// DefaultTimeout bounds each check.
const DefaultTimeout = 2 * time.Second

// Handler answers /readyz. Until SetChecks is called it answers 503
// {"status":"starting"}.
type Handler struct {
	// Timeout bounds each check; 0 is DefaultTimeout.
	Timeout time.Duration
	checks  atomic.Pointer[[]Check]
}

// SetChecks sets the checks, once the process has started its parts.
func (h *Handler) SetChecks(checks ...Check) { h.checks.Store(&checks) }

// Result is one check's outcome in the /readyz body.
type Result struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Report is the /readyz body.
type Report struct {
	// Status is "ready", "not ready" or "starting".
	Status string            `json:"status"`
	Checks map[string]Result `json:"checks,omitempty"`
	// Failed names the checks that failed, in order.
	Failed []string `json:"failed,omitempty"`
}

// Run runs the checks concurrently, each within the timeout.
func (h *Handler) Run(ctx context.Context) Report {
	p := h.checks.Load()
	if p == nil {
		return Report{Status: "starting"}
	}
	checks := *p
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	results := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			detail, err := c.Run(ctx)
			if err != nil {
				results[i] = Result{Detail: err.Error()}
				return
			}
			results[i] = Result{OK: true, Detail: detail}
		})
	}
	wg.Wait()
	rep := Report{Status: "ready", Checks: map[string]Result{}}
	for i, c := range checks {
		rep.Checks[c.Name] = results[i]
		if !results[i].OK {
			rep.Status = "not ready"
			rep.Failed = append(rep.Failed, c.Name)
		}
	}
	return rep
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep := h.Run(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if rep.Status != "ready" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}

// Temporal checks the connection to Temporal with its health check RPC.
func Temporal(c client.Client, addr string) Check {
	return Check{Name: "temporal", Run: func(ctx context.Context) (string, error) {
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return "", fmt.Errorf("Temporal at %s does not answer its health check: %w", addr, err)
		}
		return "Temporal at " + addr + " answers", nil
	}}
}

// PollerMaxAge is how recently a worker must have polled for it to count:
// a long poll lasts about a minute, so a live worker's last poll is never
// older than that; a dead one's lingers in DescribeTaskQueue for minutes.
const PollerMaxAge = 90 * time.Second

// Workers checks that some worker polls taskQueue for workflow tasks: a
// poller seen by Temporal within PollerMaxAge (DescribeTaskQueue).
func Workers(c client.Client, taskQueue string, now func() time.Time) Check {
	if now == nil {
		now = time.Now
	}
	return Check{Name: "workers", Run: func(ctx context.Context) (string, error) {
		resp, err := c.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			return "", fmt.Errorf("describe task queue %q: %w", taskQueue, err)
		}
		live := 0
		for _, p := range resp.GetPollers() {
			if t := p.GetLastAccessTime(); t != nil && now().Sub(t.AsTime()) <= PollerMaxAge {
				live++
			}
		}
		if live == 0 {
			return "", fmt.Errorf("no worker polls task queue %q (none seen in the last %s)", taskQueue, PollerMaxAge)
		}
		return fmt.Sprintf("%d worker(s) poll task queue %q", live, taskQueue), nil
	}}
}
