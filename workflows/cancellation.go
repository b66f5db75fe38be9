package workflows

// Cancellation says who cancelled a wait, from the cancel request Temporal
// recorded (the WorkflowExecutionCancelRequested event): the identity of the
// client that asked (the Temporal UI's user, `temporal workflow cancel`'s
// identity, or the operator `durawait waits cancel` names) and its reason.
type Cancellation struct {
	// By is the identity of whoever asked; "unknown" when none was recorded.
	By string `json:"by"`
	// Cause is the reason given with the request, when one was.
	Cause string `json:"cause,omitempty"`
	// At is when the cancel was requested (RFC 3339).
	At string `json:"at,omitempty"`
}

// String is the cancellation in words.
func (c Cancellation) String() string {
	s := "cancelled by " + c.By
	if c.Cause != "" {
		s += " (" + c.Cause + ")"
	}
	return s
}
