package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/durawait/durawait/activities/tmuxwatch"
	"github.com/durawait/durawait/workflows"
)

// PaneWatcher runs wait_for_text watches on the host that owns the tmux
// server.
type PaneWatcher struct {
	// Observer, when set, is told when the baseline is read.
	Observer Observer
	// Clients shares the control clients among the watches; it must be
	// set.
	Clients *tmuxwatch.Hub
	// LivenessInterval is how often the pane's life is re-checked while no
	// notification arrives (text itself is event-driven).
	LivenessInterval time.Duration
	// Logger, when set, gets a debug line each time a watch has read its
	// baseline: text printed after that line's time is the watch's
	// output, never its baseline (the crash soak's judge reads it).
	Logger *slog.Logger
}

// Watch follows the pane through its session's read-only control client
// (attaching one if none is), captures the baseline, and follows the
// pane's output until the text appears, the deadline passes, or the pane
// dies. workflowID is the wait's. An error is a passing one (the watch
// starts again) or ctx's.
func (w *PaneWatcher) Watch(ctx context.Context, workflowID string, in workflows.WatchPaneInput) (workflows.TextWaitOutcome, error) {
	backoff := paneRetryInitial
	for {
		out, err := w.watch(ctx, workflowID, in)
		if err == nil || ctx.Err() != nil {
			return out, err
		}
		// A passing failure (the control client ended, the pane moved):
		// the watch starts again, with a new baseline, until the bound.
		wait := min(backoff, time.Until(in.Deadline))
		if wait <= 0 {
			return workflows.TextWaitOutcome{Error: &workflows.TextWaitError{
				Code: workflows.TextErrTmuxUnavailable, Effects: "none", Retryable: true,
				Message: fmt.Sprintf("the watch of pane %s failed until the bound: %v", in.Spec.Target.PaneID, err),
			}}, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return workflows.TextWaitOutcome{}, ctx.Err()
		}
		backoff = min(2*backoff, paneRetryMax)
	}
}

// The delays between the starts of a watch that failed for a passing
// reason.
const (
	paneRetryInitial = 500 * time.Millisecond
	paneRetryMax     = 2 * time.Second
)

func (w *PaneWatcher) watch(ctx context.Context, workflowID string, in workflows.WatchPaneInput) (workflows.TextWaitOutcome, error) {
	srv := w.Clients.Server(in.Socket)
	spec := in.Spec
	pane := spec.Target.PaneID
	fail := func(err error) (workflows.TextWaitOutcome, error) {
		var te *tmuxwatch.Error
		if errors.As(err, &te) {
			return workflows.TextWaitOutcome{Error: &workflows.TextWaitError{
				Code: te.Code, Message: te.Message, Effects: "none", Retryable: te.Retryable,
			}}, nil
		}
		return workflows.TextWaitOutcome{}, err // a passing failure: the watch starts again
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
	if w.Logger != nil {
		w.Logger.Debug("a pane watch read its baseline", "workflow", workflowID, "pane", pane, "bytes", len(baseline))
	}
	if strings.Contains(baseline, spec.Text) {
		return workflows.TextWaitOutcome{Result: workflows.NewTextResult(spec, true, "baseline", guarantee+", before the baseline was captured")}, nil
	}

	if w.Observer != nil {
		w.Observer.Observe(workflowID, workflows.BaselineRead{PaneID: pane, Bytes: len(baseline)})
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
		case <-deadline.C:
			return workflows.TextWaitOutcome{Result: workflows.NewTextResult(spec, false, "output",
				guarantee+"; the text did not appear before the bound")}, nil
		case <-ctx.Done():
			return workflows.TextWaitOutcome{}, ctx.Err()
		}
	}
}
