package hosting

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
)

// spoolPruneInterval is how often the own host's sweep looks for agent
// spools whose invocation Temporal no longer keeps (the first sweep looks
// at once).
const spoolPruneInterval = time.Hour

// pruneSpools removes the spool folders of the agent invocations that ran
// here, whose CLIs ended, and that Temporal no longer knows: their
// retention (retention_hours on the embedded engine, the namespace's on a
// cluster) has passed, and with it wait_agent's last read of their output.
// At most once a spoolPruneInterval.
func (r *Runtime) pruneSpools(ctx context.Context) {
	agents := r.opts.Agents
	if agents == nil {
		return
	}
	r.mu.Lock()
	due := r.spoolsPruned.IsZero() || time.Since(r.spoolsPruned) >= spoolPruneInterval
	if due {
		r.spoolsPruned = time.Now()
	}
	r.mu.Unlock()
	if !due {
		return
	}
	for _, id := range agents.SpooledInvocations() {
		if ctx.Err() != nil {
			return
		}
		_, err := r.opts.Client.DescribeWorkflowExecution(ctx, id, "")
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) {
			continue // kept (or Temporal cannot say)
		}
		removed, err := agents.RemoveSpool(id)
		switch {
		case err != nil:
			r.logger.Warn("could not remove the spool of an agent invocation past its retention", "invocation", id, "error", err)
		case removed > 0:
			r.logger.Info("removed the spool of an agent invocation past its retention", "invocation", id, "folders", removed)
		}
	}
}
