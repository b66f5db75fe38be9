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
	"go.temporal.io/api/workflowservice/v1"
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

// DefaultCacheFor is how long a report answers /readyz again: probes
// (unauthenticated, maybe many) cost Temporal at most one round of checks
// a second.
const DefaultCacheFor = time.Second

// Handler answers /readyz. Until SetChecks is called it answers 503
// {"status":"starting"}; once SetDraining is called, 503
// {"status":"draining"}.
type Handler struct {
	// Timeout bounds each check; 0 is DefaultTimeout.
	Timeout time.Duration
	// CacheFor is how long a report is reused; 0 is DefaultCacheFor, and
	// a negative value runs the checks on every request.
	CacheFor time.Duration
	// Now is the clock of the cache; nil is time.Now.
	Now func() time.Time

	checks   atomic.Pointer[[]Check]
	draining atomic.Bool

	// mu makes concurrent requests share one round of checks; last is
	// that round's report, run at lastAt.
	mu     sync.Mutex
	last   Report
	lastAt time.Time
}

// SetChecks sets the checks, once the process has started its parts.
func (h *Handler) SetChecks(checks ...Check) {
	h.checks.Store(&checks)
	h.mu.Lock()
	h.lastAt = time.Time{}
	h.mu.Unlock()
}

// SetDraining marks the process as shutting down: from now on /readyz
// answers 503 {"status":"draining","failed":["draining"]} at once, so a
// load balancer stops sending calls that the drain would refuse.
func (h *Handler) SetDraining() { h.draining.Store(true) }

// Report runs the checks, or reuses the report of a round run less than
// CacheFor ago; concurrent requests wait for one round. A draining
// process reports so without any check.
func (h *Handler) Report(ctx context.Context) Report {
	if h.draining.Load() {
		return Report{Status: "draining", Failed: []string{"draining"}}
	}
	if h.checks.Load() == nil {
		return Report{Status: "starting"}
	}
	cacheFor := h.CacheFor
	if cacheFor == 0 {
		cacheFor = DefaultCacheFor
	}
	now := h.Now
	if now == nil {
		now = time.Now
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.lastAt.IsZero() && now().Sub(h.lastAt) < cacheFor {
		return h.last
	}
	// Not the request's own context: its round serves the requests that
	// wait for it too, and each check has its timeout.
	h.last, h.lastAt = h.Run(context.WithoutCancel(ctx)), now()
	return h.last
}

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

// ServeHTTP answers /readyz with Report: 200 when ready, 503 otherwise.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep := h.Report(r.Context())
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
	return Check{Name: "workers", Run: func(ctx context.Context) (string, error) {
		live, err := LivePollers(ctx, c, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW, PollerMaxAge, now)
		if err != nil {
			return "", err
		}
		if live == 0 {
			return "", fmt.Errorf("no worker polls task queue %q (none seen in the last %s)", taskQueue, PollerMaxAge)
		}
		return fmt.Sprintf("%d worker(s) poll task queue %q", live, taskQueue), nil
	}}
}

// TaskQueueDescriber is the part of the Temporal client that describes a
// task queue.
type TaskQueueDescriber interface {
	DescribeTaskQueue(ctx context.Context, taskQueue string, taskQueueType enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error)
}

// LivePollers counts the workers Temporal saw poll taskQueue for tasks of
// typ within maxAge of now (nil: time.Now). Temporal lists a poller for
// minutes after its last poll; its last access time tells a live one.
func LivePollers(ctx context.Context, c TaskQueueDescriber, taskQueue string, typ enumspb.TaskQueueType, maxAge time.Duration, now func() time.Time) (int, error) {
	if now == nil {
		now = time.Now
	}
	resp, err := c.DescribeTaskQueue(ctx, taskQueue, typ)
	if err != nil {
		return 0, fmt.Errorf("describe task queue %q: %w", taskQueue, err)
	}
	live := 0
	for _, p := range resp.GetPollers() {
		if t := p.GetLastAccessTime(); t != nil && now().Sub(t.AsTime()) <= maxAge {
			live++
		}
	}
	return live, nil
}
