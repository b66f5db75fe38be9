package workflows

// The outcomes of a wait's end that are not a WaitState, as the front
// end's metrics (durawait.waits.ended), log lines and /events, and the
// worker's "wait ended" line, name them: wire vocabulary, shared by the
// front end and the worker. The others are the tools' own (wait_for's
// reason, an agent's status, wait_for_text's matched / not_matched or
// error code) and the WaitStates.
const (
	// OutcomeError is a call answered with isError that names no code of
	// its own (bad arguments, a failed probe, a drain, a panic).
	OutcomeError = "error"
	// OutcomeClientGone is a call whose caller went away before the
	// answer; the wait itself runs on to its own bound.
	OutcomeClientGone = "client_gone"
	// OutcomeCancelled is a wait an operator cancelled (wait_for answers
	// reason "failed" with a "cancelled" object; its outcome says
	// cancelled, as StateCancelled does).
	OutcomeCancelled = string(StateCancelled)
	// OutcomeTaskCreated is a task-augmented call that returned its task:
	// the wait goes on, and its end is the worker's "wait ended" line (and
	// tasks/result).
	OutcomeTaskCreated = "task_created"
	// OutcomeCompleted is the "wait ended" outcome of a run begun before
	// search attributes that completed (it has no DurawaitState).
	OutcomeCompleted = "completed"
)
