package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/workflows"
)

// activity tracks the daemon's MCP traffic: requests in flight (an open
// session holds its notification stream open, so it counts) and when the
// last one ended.
type activity struct {
	inflight atomic.Int64
	last     atomic.Int64 // unix nanoseconds
}

// wrap counts the requests that h serves.
func (a *activity) wrap(h http.Handler) http.Handler {
	a.last.Store(time.Now().UnixNano())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.inflight.Add(1)
		defer func() {
			a.last.Store(time.Now().UnixNano())
			a.inflight.Add(-1)
		}()
		h.ServeHTTP(w, r)
	})
}

// idleSince is how long no request has been in flight, or 0.
func (a *activity) idleSince(now time.Time) time.Duration {
	if a.inflight.Load() > 0 {
		return 0
	}
	return now.Sub(time.Unix(0, a.last.Load()))
}

// watchIdle calls stop once no client has been connected for idle and no
// wait runs (running reports how many do). An error counting the waits
// counts as busy.
func watchIdle(ctx context.Context, a *activity, idle time.Duration, running func(context.Context) (int64, error), logger *slog.Logger, stop func()) {
	tick := time.NewTicker(min(idle/4, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if a.idleSince(now) < idle {
				continue
			}
			n, err := running(ctx)
			if err != nil {
				logger.Warn("idle check: count running waits", "error", err)
				continue
			}
			if n > 0 {
				continue
			}
			logger.Info("no client and no running wait; the daemon exits", "idle", idle.String())
			stop()
			return
		}
	}
}

// runningWaitsQuery selects the running workflows that keep the daemon up:
// the waits (workflows.RunningWaitsQuery), not durawait's own workflows,
// which run for as long as workers do.
var runningWaitsQuery = workflows.RunningWaitsQuery

// runningWaits counts the namespace's running waits.
func runningWaits(tc client.Client, namespace string) func(context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: namespace, Query: runningWaitsQuery,
		})
		if err != nil {
			return 0, err
		}
		return resp.GetCount(), nil
	}
}
