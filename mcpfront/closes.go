package mcpfront

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// closes tells the calls waiting on waits in a front with an in-process
// feed when the waits' runs close. The feed answers a wait the moment its
// loop ends; a run that ends otherwise (an operator's cancel, Temporal's
// bound, a failure before its loop, a loop run by another process) is
// found here, by one visibility query every interval for all the calls
// waiting, instead of by a long poll of Temporal per call (four
// goroutines and a gRPC stream per wait, held for its whole life).
type closes struct {
	client    client.Client
	namespace string
	interval  time.Duration
	logger    *slog.Logger

	mu      sync.Mutex
	waiting map[runKey]*closeWaiters
	// watching is set while the watch loop runs.
	watching bool
}

// runKey names a workflow run.
type runKey struct{ workflowID, runID string }

// closeWaiters are the calls waiting on one run: closed is closed once it
// closed.
type closeWaiters struct {
	n      int
	closed chan struct{}
}

// closesWindow is how far back each look reads closes: a close reaches
// visibility a moment after it happened, so a look reads again what the
// looks before it read, and a close late by less than this is still found.
const closesWindow = 30 * time.Second

// defaultClosesInterval is how often the watch looks.
const defaultClosesInterval = time.Second

func newCloses(c client.Client, namespace string, logger *slog.Logger) *closes {
	return &closes{client: c, namespace: namespace, interval: defaultClosesInterval, logger: logger, waiting: map[runKey]*closeWaiters{}}
}

// await returns a channel closed once the run closes, and the function
// that ends the wait for it.
func (c *closes) await(workflowID, runID string) (<-chan struct{}, func()) {
	key := runKey{workflowID, runID}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waiting[key]
	if w == nil {
		w = &closeWaiters{closed: make(chan struct{})}
		c.waiting[key] = w
	}
	w.n++
	if !c.watching {
		c.watching = true
		go c.watch()
	}
	var once sync.Once
	return w.closed, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if w.n--; w.n == 0 && c.waiting[key] == w {
				delete(c.waiting, key)
			}
		})
	}
}

// watch looks for closes every interval while calls wait, and ends when
// none does.
func (c *closes) watch() {
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for range ticker.C {
		c.mu.Lock()
		if len(c.waiting) == 0 {
			c.watching = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if err := c.look(time.Now().Add(-closesWindow)); err != nil {
			c.logger.Warn("could not look up the waits that closed; looking again", "error", err)
		}
	}
}

// look reads the runs closed since since and tells their waiters.
func (c *closes) look(since time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	query := fmt.Sprintf("ExecutionStatus != 'Running' AND CloseTime >= %q", since.UTC().Format(time.RFC3339Nano))
	var token []byte
	for {
		resp, err := c.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: c.namespace, Query: query, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return err
		}
		c.mu.Lock()
		for _, e := range resp.GetExecutions() {
			key := runKey{e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()}
			if w := c.waiting[key]; w != nil {
				delete(c.waiting, key)
				close(w.closed)
			}
		}
		c.mu.Unlock()
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}
