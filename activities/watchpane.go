package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/durawait/durawait/activities/tmuxwatch"
	"github.com/durawait/durawait/workflows"
)

// PaneHeartbeatInterval is how often a pane watch heartbeats; a
// cancellation reaches it with the next heartbeat.
const PaneHeartbeatInterval = 200 * time.Millisecond

// PaneWatcher runs wait_for_text watches on the host that owns the tmux
// server.
type PaneWatcher struct {
	// Observer, when set, is told of the outcome the moment it is known.
	Observer Observer
	// Clients shares the control clients among the watches; it must be
	// set.
	Clients *tmuxwatch.Hub
	// LivenessInterval is how often the pane's life is re-checked while no
	// notification arrives (text itself is event-driven).
	LivenessInterval time.Duration
}

// WatchPane follows the pane through its session's read-only control
// client (attaching one if none is), captures the
// baseline, and follows the pane's output until the text appears, the
// deadline passes, or the pane dies.
func (w *PaneWatcher) WatchPane(ctx context.Context, in workflows.WatchPaneInput) (workflows.TextWaitOutcome, error) {
	out, err := w.watch(ctx, in)
	if err == nil && w.Observer != nil {
		w.Observer.Observe(activity.GetInfo(ctx).WorkflowExecution.ID, out)
	}
	return out, err
}

func (w *PaneWatcher) watch(ctx context.Context, in workflows.WatchPaneInput) (workflows.TextWaitOutcome, error) {
	srv := tmuxwatch.Server{Socket: in.Socket}
	spec := in.Spec
	pane := spec.Target.PaneID
	fail := func(err error) (workflows.TextWaitOutcome, error) {
		var te *tmuxwatch.Error
		if errors.As(err, &te) {
			return workflows.TextWaitOutcome{Error: &workflows.TextWaitError{
				Code: te.Code, Message: te.Message, Effects: "none", Retryable: te.Retryable,
			}}, nil
		}
		return workflows.TextWaitOutcome{}, err // retried
	}
	guarantee := fmt.Sprintf("pane %s was verified to be at generation %s (same tmux server and pane process) when this watch started", pane, spec.Target.Generation)

	if _, err := srv.Lookup(ctx, pane, spec.Target.Generation); err != nil {
		return fail(err)
	}
	// Attach first, then capture: output printed in between is in one or the other.
	follower, err := w.Clients.Follow(ctx, srv, pane)
	if err != nil {
		return fail(err)
	}
	defer follower.Close()
	baseline, err := srv.Capture(ctx, pane)
	if err != nil {
		return fail(err)
	}
	if strings.Contains(baseline, spec.Text) {
		return workflows.TextWaitOutcome{Result: workflows.NewTextResult(spec, true, "baseline", guarantee+", before the baseline was captured")}, nil
	}

	if w.Observer != nil {
		w.Observer.Observe(activity.GetInfo(ctx).WorkflowExecution.ID, workflows.BaselineRead{PaneID: pane, Bytes: len(baseline)})
	}

	var cleaner tmuxwatch.Cleaner
	finder := tmuxwatch.NewFinder(spec.Text)
	deadline := time.NewTimer(time.Until(in.Deadline))
	defer deadline.Stop()
	interval := w.LivenessInterval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	liveness := time.NewTicker(interval)
	defer liveness.Stop()
	beat := time.NewTicker(PaneHeartbeatInterval)
	defer beat.Stop()
	// stillThere checks that the pane lives and that the session whose
	// control client the watch follows still holds it: a pane moved to
	// another session (join-pane, move-window, unlink-window) falls silent
	// on that client, so the watch starts again, on a session that holds
	// it and with a new baseline.
	stillThere := func() error {
		now, sessions, err := srv.Locate(ctx, pane, spec.Target.Generation)
		var te *tmuxwatch.Error
		if errors.As(err, &te) && te.Code != workflows.TextErrTmuxUnavailable {
			return &tmuxwatch.Error{Code: workflows.TextErrPaneDied, Message: fmt.Sprintf("pane %s died while waiting: %s", pane, te.Message)}
		}
		if err == nil && !slices.Contains(sessions, follower.Session()) {
			return fmt.Errorf("pane %s left session %s for %q; the watch starts again there", pane, follower.Session(), now.Session)
		}
		return err
	}
	for {
		select {
		case ev, open := <-follower.Events():
			if !open {
				if err := stillThere(); err != nil {
					return fail(err)
				}
				return workflows.TextWaitOutcome{}, errors.New("the pane's output stream ended (its tmux control client ended, or this watch fell behind); the watch starts again")
			}
			if ev.Output != nil && finder.Feed(cleaner.Clean(ev.Output)) {
				return workflows.TextWaitOutcome{Result: workflows.NewTextResult(spec, true, "output",
					guarantee+", and it had not died or been respawned when the text appeared")}, nil
			}
			if ev.Notice != "" {
				if err := stillThere(); err != nil {
					return fail(err)
				}
			}
		case <-liveness.C:
			if err := stillThere(); err != nil {
				return fail(err)
			}
		case <-beat.C:
			activity.RecordHeartbeat(ctx)
		case <-deadline.C:
			return workflows.TextWaitOutcome{Result: workflows.NewTextResult(spec, false, "output",
				guarantee+"; the text did not appear before the bound")}, nil
		case <-ctx.Done():
			return workflows.TextWaitOutcome{}, ctx.Err()
		}
	}
}
