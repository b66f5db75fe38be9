package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// WaitForWorkflowName and PollProbeActivityName are the names the worker
// registers; they are part of the durable contract with running histories.
const (
	WaitForWorkflowName   = "WaitFor"
	PollProbeActivityName = "PollProbe"
)

// Temporal error types (the Type of a temporal.ApplicationError) of a
// wait_for that ended without a result. The activity raises them as
// non-retryable application errors; the caller reads the error's message.
const (
	ErrTypeProbeOutputTooLarge = "ProbeOutputTooLarge"
	ErrTypeProbeReturnedError  = "ProbeReturnedError"
	ErrTypeProbeHung           = "ProbeHung"
	ErrTypeNoSample            = "NoSample"
	ErrTypeInvalidSpec         = "InvalidSpec"
)

// DefaultHeartbeatTimeout is how long a probe loop may go silent before
// Temporal retries it elsewhere; it bounds recovery after a crash.
const DefaultHeartbeatTimeout = 5 * time.Second

// WaitForInput is the input of the WaitFor workflow.
type WaitForInput struct {
	Spec WaitForSpec `json:"spec"`
	// HeartbeatTimeout of the probe loop; DefaultHeartbeatTimeout when zero.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout"`
}

// PollInput is the input of the PollProbe activity: the spec and when the
// wait began, from which Schedule derives everything else.
//
// It is recorded in the workflow's history, and a worker of the previous
// release may run the activity during a rolling upgrade: the legacy fields
// carry what that release reads (derived from spec and started_at exactly as
// Schedule and WaitForSpec.QuietFor derive them). This release never reads
// them; drop them once no worker of that release runs.
type PollInput struct {
	Spec WaitForSpec `json:"spec"`
	// StartedAt is when the wait began (the first call).
	StartedAt time.Time `json:"started_at"`

	LegacyDeadline time.Time     `json:"deadline,omitzero"`
	LegacyPoll     time.Duration `json:"poll,omitempty"`
	LegacyQuietFor time.Duration `json:"quiet_for,omitempty"`
}

// NewPollInput is the probe loop's input for spec, begun at start.
func NewPollInput(spec WaitForSpec, start time.Time) PollInput {
	s := NewPollSchedule(spec, start)
	return PollInput{Spec: spec, StartedAt: start,
		LegacyDeadline: s.Deadline, LegacyPoll: s.Poll, LegacyQuietFor: spec.QuietFor()}
}

// Schedule is the wait's sampling schedule.
func (in PollInput) Schedule() PollSchedule { return NewPollSchedule(in.Spec, in.StartedAt) }

// deadlineGrace is how long past its deadline a heartbeating watch
// activity (the probe loop, a pane watch) may still report: long enough
// for a lost attempt to be noticed (one heartbeat timeout) and retried to
// report its last state. The activity's schedule-to-close timeout is its
// deadline plus this grace.
func deadlineGrace(heartbeat time.Duration) time.Duration {
	return 2*heartbeat + 5*time.Second
}

// WaitFor is the workflow behind one wait_for call. It runs the whole probe
// loop in one heartbeating activity (the frequent-polling pattern), so its
// history has the same few events whether the wait takes 3 samples or 300.
//
// The bound is enforced twice. The activity never sleeps or probes past the
// deadline, and races each probe call against it. Temporal enforces the
// activity's schedule-to-close timeout (deadline plus grace) as a durable
// server-side timer, which ends the wait even if no worker is left to run
// the activity; the timeout carries the last heartbeat, so the result still
// holds every sample taken.
//
// A run begun by this release shows DurawaitState: running from the start
// (its front starts it so; started without it, it upserts it at once),
// then how it ended (matched, settled, failed, timeout, cancelled, error).
//
// The end state is upserted on the way out, not in a defer: a deferred
// upsert would also run when the SDK evicts the workflow from its cache
// (runtime.Goexit), on a discarded environment.
func WaitFor(ctx workflow.Context, in WaitForInput) (WaitForResult, error) {
	upserts, mayStartRunning := waitObservability(ctx)
	if !upserts {
		return waitFor(ctx, in)
	}
	markRunning(ctx, mayStartRunning)
	result, err := waitFor(ctx, in)
	setState(ctx, waitForEndState(result, err))
	return result, err
}

// waitFor is WaitFor's body.
func waitFor(ctx workflow.Context, in WaitForInput) (result WaitForResult, err error) {
	started := workflow.Now(ctx)
	maxWait := in.Spec.MaxWait()
	heartbeat := in.HeartbeatTimeout
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeatTimeout
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: maxWait + deadlineGrace(heartbeat),
		HeartbeatTimeout:       heartbeat,
		Summary:                PollSummary(in.Spec),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    heartbeat,
			NonRetryableErrorTypes: []string{
				ErrTypeProbeOutputTooLarge, ErrTypeProbeReturnedError, ErrTypeProbeHung,
				ErrTypeNoSample, ErrTypeInvalidSpec,
			},
		},
	})

	input := NewPollInput(in.Spec, started)
	err = workflow.ExecuteActivity(ctx, PollProbeActivityName, input).Get(ctx, &result)
	if err == nil {
		return result, nil
	}

	var timeoutErr *temporal.TimeoutError
	if !errors.As(err, &timeoutErr) {
		return WaitForResult{}, err
	}
	// The activity could not report by deadline plus grace: its worker is
	// gone or stuck. Finish from its last heartbeat.
	elapsed := workflow.Now(ctx).Sub(started)
	var checkpoint PollCheckpoint // the previous release's PollProgress decodes too
	if timeoutErr.HasLastHeartbeatDetails() {
		if derr := timeoutErr.LastHeartbeatDetails(&checkpoint); derr != nil {
			return WaitForResult{}, fmt.Errorf("decode last heartbeat of the probe loop: %w", derr)
		}
	}
	progress := checkpoint.Progress()
	if !progress.HasObservation {
		return WaitForResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no sample of %s was taken within max_wait_sec %d: no worker ran the probe in time",
				in.Spec.Probe.Tool, in.Spec.MaxWaitSec),
			ErrTypeNoSample, err)
	}
	if reason, cond, ok := lastSampleVerdict(ctx, in.Spec, checkpoint); ok {
		return progress.Result(in.Spec, reason, cond, elapsed), nil
	}
	return progress.Result(in.Spec, WaitReasonTimeout, "", elapsed), nil
}

// judgeLastHeartbeatChange is the version marker of lastSampleVerdict: runs
// that took the fallback path before it answered timeout whatever their
// last sample said, and replay so.
const judgeLastHeartbeatChange = "durawait-judge-last-heartbeat"

// lastSampleVerdict judges the last sample a lost probe loop's heartbeat
// carried, when the heartbeat holds the whole observation (at most
// MaxCheckpointExcerptBytes): a loop whose worker died after it took a
// sample that met the condition, and that no worker resumed before the
// bound ran out, answers with that sample's verdict (matched, failed,
// settled), not timeout. A quiet window is judged at the last attempt's
// time, no later than the sample itself, so it never settles early. It is
// a pure function of the spec and the checkpoint, so deterministic.
func lastSampleVerdict(ctx workflow.Context, spec WaitForSpec, c PollCheckpoint) (WaitReason, ConditionKind, bool) {
	whole := c.ObservationSHA256 == "" || c.ObservationBytes <= len(c.LastObservation)
	if !c.HasObservation || !whole {
		return "", "", false
	}
	m, err := NewMatcher(spec, spec.QuietFor())
	if err != nil {
		return "", "", false
	}
	p := c.Progress()
	reason, cond, done := m.Judge(p, p.LastAttemptAt)
	if !done || workflow.GetVersion(ctx, judgeLastHeartbeatChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return "", "", false
	}
	return reason, cond, true
}

// waitForEndState is the DurawaitState of a wait_for that returned result
// and err.
func waitForEndState(result WaitForResult, err error) WaitState {
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		return WaitState(result.Reason) // the reasons are states of the same names
	case errors.As(err, &canceled):
		return StateCancelled
	}
	return StateError
}
