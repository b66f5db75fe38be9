package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names of the wait_for_text workflow and its activity.
const (
	WaitForTextWorkflowName = "WaitForText"
	WatchPaneActivityName   = "WatchPane"
)

// Limits of wait_for_text's arguments (its input schema).
const (
	MaxPaneIDBytes     = 64
	MaxGenerationBytes = 128
	MaxTextBytes       = 1024
)

var paneIDPattern = regexp.MustCompile(`^%(0|[1-9][0-9]*)$`)

// PaneTarget is a pane at one generation, as list_panes reports it.
type PaneTarget struct {
	PaneID     string `json:"paneId"`
	Generation string `json:"generation"`
}

// TextWaitSpec is a parsed wait_for_text call.
type TextWaitSpec struct {
	Target PaneTarget `json:"target"`
	Text   string     `json:"text"`
}

// TextWaitResult is the first result variant of wait_for_text.
type TextWaitResult struct {
	Matched             bool       `json:"matched"`
	Source              string     `json:"source"`
	TerminalContent     string     `json:"terminalContent"`
	Evidence            string     `json:"evidence"`
	Continuity          string     `json:"continuity"`
	Text                string     `json:"text"`
	GenerationGuarantee string     `json:"generationGuarantee"`
	KeysSent            bool       `json:"keysSent"`
	Target              PaneTarget `json:"target"`
}

// TextErrorCode is the code of wait_for_text's error variant (and of
// list_panes' errors): part of the tools' wire contract.
type TextErrorCode string

// The error codes of wait_for_text and list_panes.
const (
	// TextErrInvalidArguments: the arguments broke the input schema.
	TextErrInvalidArguments TextErrorCode = "invalid_arguments"
	// TextErrPaneNotFound: the tmux server has no such pane.
	TextErrPaneNotFound TextErrorCode = "pane_not_found"
	// TextErrStaleGeneration: the pane is a different life of the pane
	// than the generation asked for.
	TextErrStaleGeneration TextErrorCode = "stale_generation"
	// TextErrTmuxUnavailable: tmux is not installed, no tmux server runs,
	// or no worker on the tmux host watched the pane.
	TextErrTmuxUnavailable TextErrorCode = "tmux_unavailable"
	// TextErrPaneDied: the pane's process exited.
	TextErrPaneDied TextErrorCode = "pane_died"
	// TextErrCancelled: an operator cancelled the wait (Cancellation says
	// who).
	TextErrCancelled TextErrorCode = "cancelled"
)

// TextWaitError is the error of the second result variant.
type TextWaitError struct {
	Code      TextErrorCode `json:"code"`
	Message   string        `json:"message"`
	Effects   string        `json:"effects"`
	Retryable bool          `json:"retryable"`
}

// TextWaitOutcome is how a wait_for_text ended: exactly one field is set.
type TextWaitOutcome struct {
	Result *TextWaitResult `json:"result,omitempty"`
	Error  *TextWaitError  `json:"error,omitempty"`
}

// BaselineRead is what a pane watch reports, in process, once it has read
// the pane's baseline without finding the text and follows its output.
type BaselineRead struct {
	PaneID string
	// Bytes is the baseline's size.
	Bytes int
}

// NewTextResult fills the constant fields of variant 1.
func NewTextResult(spec TextWaitSpec, matched bool, source, guarantee string) *TextWaitResult {
	return &TextWaitResult{
		Matched: matched, Source: source, TerminalContent: "data", Evidence: "literal_text",
		Continuity: "reset", Text: spec.Text, GenerationGuarantee: guarantee, KeysSent: false, Target: spec.Target,
	}
}

// ParseWaitForText checks wait_for_text's arguments against its input
// schema: lengths in bytes, valid UTF-8, the paneId pattern, no unknown
// fields.
func ParseWaitForText(raw json.RawMessage) (TextWaitSpec, error) {
	var errs fieldErrors
	obj, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return TextWaitSpec{}, errs.err()
	}
	rejectUnknown(obj, "", []string{"target", "text"}, &errs)
	var spec TextWaitSpec
	if t, present := obj["target"]; !present {
		errs.add("target", "is required: {paneId, generation} from list_panes")
	} else if target, ok := decodeObject(t, "target", &errs); ok {
		rejectUnknown(target, "target.", []string{"paneId", "generation"}, &errs)
		if id, ok := utf8Field(target, "target.paneId", MaxPaneIDBytes, &errs); ok {
			if !paneIDPattern.MatchString(id) {
				errs.add("target.paneId", fmt.Sprintf("%q must match ^%%(0|[1-9][0-9]*)$ (a pane ID such as %%3)", id))
			} else {
				spec.Target.PaneID = id
			}
		}
		if g, ok := utf8Field(target, "target.generation", MaxGenerationBytes, &errs); ok {
			spec.Target.Generation = g
		}
	}
	if text, ok := utf8Field(obj, "text", MaxTextBytes, &errs); ok {
		if text == "" {
			errs.add("text", "must be at least 1 byte")
		} else {
			spec.Text = text
		}
	}
	if err := errs.err(); err != nil {
		return TextWaitSpec{}, err
	}
	return spec, nil
}

// utf8Field reads a required string member that must be valid UTF-8 of at
// most max bytes. encoding/json replaces invalid UTF-8 (and lone surrogate
// escapes) with U+FFFD, so a replacement character that the raw JSON did not
// spell out means the input was not valid UTF-8.
func utf8Field(obj map[string]json.RawMessage, field string, max int, errs *fieldErrors) (string, bool) {
	name := field[strings.LastIndexByte(field, '.')+1:]
	raw, present := obj[name]
	if !present {
		errs.add(field, "is required")
		return "", false
	}
	var s string
	if !decodeString(raw, &s, field, "", errs) {
		return "", false
	}
	if strings.ContainsRune(s, utf8.RuneError) && !strings.Contains(string(raw), "\uFFFD") && !strings.Contains(strings.ToLower(string(raw)), `\ufffd`) {
		errs.add(field, "must be valid UTF-8")
		return "", false
	}
	if len(s) > max {
		errs.add(field, fmt.Sprintf("must be at most %d bytes of UTF-8 (got %d bytes)", max, len(s)))
		return "", false
	}
	return s, true
}

// WaitForTextInput is the input of the WaitForText workflow.
type WaitForTextInput struct {
	Spec TextWaitSpec `json:"spec"`
	// HostQueue is the task queue of the workers on the machine that runs
	// the tmux server (the tmux host): one of them claims the watch.
	HostQueue string `json:"host_queue"`
	// Host, when set, is the host that watches the pane (the front's own
	// worker, on the tmux host), with no claim.
	Host string `json:"host,omitempty"`
	// Socket selects the tmux server; empty is the user's default.
	Socket  string        `json:"socket,omitempty"`
	MaxWait time.Duration `json:"max_wait"`
}

// WatchPaneInput is the input of the WatchPane activity.
type WatchPaneInput struct {
	Spec TextWaitSpec `json:"spec"`
	// TmuxQueue is the tmux host's queue: a host that adopts the watch
	// runs it when it is a worker of that tmux host.
	TmuxQueue string    `json:"tmux_queue"`
	Socket    string    `json:"socket,omitempty"`
	Deadline  time.Time `json:"deadline"`
}

// ClaimPaneHostActivityName is the activity a worker on the tmux host
// answers with its host, to watch a pane (WaitForText).
const ClaimPaneHostActivityName = "ClaimPaneHost"

// paneClaimTimeout bounds how long a wait_for_text waits for a worker on
// the tmux host to claim its watch, at most its bound.
const paneClaimTimeout = 30 * time.Second

// WaitForText is the workflow behind one wait_for_text call. The watch is
// one activity (WatchPane) on the queue of a host on the machine that owns
// the tmux server (see loops.go): the front's own worker, or the one that
// claims it first. A watch resumed after a restart or a move starts over
// with a fresh baseline (continuity "reset"), so text printed meanwhile is
// still found.
//
// A run shows DurawaitState: running from the start (its front starts it
// so; started without it, it upserts it at once), then matched, timeout
// (the bound passed without the text), error (the pane or tmux failed) or
// cancelled. The end state is upserted on the way out, not in a defer (see
// WaitFor).
func WaitForText(ctx workflow.Context, in WaitForTextInput) (TextWaitOutcome, error) {
	markRunning(ctx)
	out, err := waitForText(ctx, in)
	setState(ctx, textEndState(out, err))
	return out, err
}

// waitForText is WaitForText's body.
func waitForText(ctx workflow.Context, in WaitForTextInput) (out TextWaitOutcome, err error) {
	started := workflowStart(ctx)
	host := in.Host
	if host == "" {
		if host, err = claimPaneHost(ctx, in); err != nil {
			return out, err
		}
		if host == "" {
			return TextWaitOutcome{Error: &TextWaitError{
				Code: TextErrTmuxUnavailable, Effects: "none", Retryable: true,
				Message: fmt.Sprintf("no worker on the tmux host (task queue %s) took the watch of pane %s within %s", in.HostQueue, in.Spec.Target.PaneID, min(paneClaimTimeout, in.MaxWait)),
			}}, nil
		}
	}
	setHost(ctx, host)
	left := in.MaxWait - workflow.Now(ctx).Sub(started)
	lctx := loopOptions(ctx, host, max(left, 0), WatchPaneSummary(in.Spec), false)
	err = awaitLoop(ctx, workflow.ExecuteActivity(lctx, WatchPaneActivityName, WatchPaneInput{
		Spec: in.Spec, TmuxQueue: in.HostQueue, Socket: in.Socket, Deadline: started.Add(in.MaxWait),
	}), host, &out)
	var timeoutErr *temporal.TimeoutError
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		stopLoop(ctx, host)
		return out, err
	case errors.As(err, &timeoutErr):
		return TextWaitOutcome{Error: &TextWaitError{
			Code: TextErrTmuxUnavailable, Effects: "none", Retryable: true,
			Message: fmt.Sprintf("no worker on the tmux host answered the watch of pane %s within the bound: host %s was down", in.Spec.Target.PaneID, host),
		}}, nil
	}
	return out, err
}

// claimPaneHost has a worker on the tmux host claim the watch, and returns
// its host, or "" when none claimed it in time.
func claimPaneHost(ctx workflow.Context, in WaitForTextInput) (string, error) {
	wait := min(paneClaimTimeout, in.MaxWait)
	cctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              in.HostQueue,
		ScheduleToCloseTimeout: wait,
		StartToCloseTimeout:    claimAttemptTimeout,
		Summary:                "claim a worker on the tmux host",
		RetryPolicy:            claimRetryPolicy(),
	})
	var host string
	err := workflow.ExecuteActivity(cctx, ClaimPaneHostActivityName).Get(ctx, &host)
	if err != nil && ctx.Err() == nil {
		return "", nil
	}
	return host, err
}

// textEndState is the DurawaitState of a wait_for_text that returned out
// and err.
func textEndState(out TextWaitOutcome, err error) WaitState {
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &canceled):
		return StateCancelled
	case err != nil || out.Error != nil || out.Result == nil:
		return StateError
	case out.Result.Matched:
		return StateMatched
	}
	return StateTimeout
}
