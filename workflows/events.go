package workflows

import "time"

// WaitEvent is what a running wait's activity tells, in process, the calls
// waiting on it: progress worth a notification, or the outcome the moment
// the activity knows it (the workflow records that same outcome durably).
// The set is closed; each tool's waits send their own events:
//
//   - wait_for: Sample and ProbeUnavailable, then WaitForResult (or
//     WaitFailed).
//   - wait_for_text: BaselineRead, then TextWaitOutcome (or WaitFailed).
//   - wait_agent: AgentProgress.
//   - wait_for_event: EventAnswered, which the front that took the post
//     tells (no activity runs).
type WaitEvent interface {
	waitEvent()
}

func (Sample) waitEvent()           {}
func (WaitForResult) waitEvent()    {}
func (BaselineRead) waitEvent()     {}
func (TextWaitOutcome) waitEvent()  {}
func (AgentProgress) waitEvent()    {}
func (WaitFailed) waitEvent()       {}
func (ProbeUnavailable) waitEvent() {}
func (EventAnswered) waitEvent()    {}

// EventAnswered is a post that ended a wait_for_event, told by the front
// that took the post to the calls waiting on it in its process.
type EventAnswered struct {
	Post EventPost
	// Started is when the wait began.
	Started time.Time
}

// ProbeUnavailable is a sample a wait_for could not take because the
// probe's server could not be reached: the wait goes on, trying again.
type ProbeUnavailable struct {
	// Message says why.
	Message string
}

// WaitFailed is a wait's loop's failure (a probe that failed, hung or
// answered too much): the wait's workflow ends with it, as an error whose
// message is Message.
type WaitFailed struct {
	Message string
}
