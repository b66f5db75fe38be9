package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names of the list_panes workflow and its activity.
const (
	ListPanesWorkflowName = "ListPanes"
	ListPanesActivityName = "ListPanes"
)

// ListPanesStartTimeout is how long a list_panes call waits for a worker
// on the tmux host to pick it up before it answers tmux_unavailable.
const ListPanesStartTimeout = 10 * time.Second

// listPanesRunTimeout bounds one run of tmux list-panes.
const listPanesRunTimeout = 30 * time.Second

// ListPanesWorkflowTimeout bounds a ListPanes workflow: its activity's
// bounds plus a minute for a worker to take the workflow.
const ListPanesWorkflowTimeout = ListPanesStartTimeout + listPanesRunTimeout + time.Minute

// Pane is one tmux pane, as list_panes reports it.
type Pane struct {
	PaneID         string `json:"paneId"`
	Generation     string `json:"generation"`
	Session        string `json:"session"`
	WindowIndex    int    `json:"windowIndex"`
	WindowName     string `json:"windowName"`
	PaneIndex      int    `json:"paneIndex"`
	Title          string `json:"title"`
	CurrentCommand string `json:"currentCommand"`
	Width          int    `json:"width"`
	Height         int    `json:"height"`
	Active         bool   `json:"active"`
	Dead           bool   `json:"dead"`
}

// ListPanesInput selects the tmux server whose panes list_panes lists.
type ListPanesInput struct {
	// HostQueue is the task queue of the host that owns the tmux server.
	HostQueue string `json:"hostQueue"`
	// Socket selects the tmux server; empty is the user's default.
	Socket string `json:"socket,omitempty"`
}

// ListPanesOutput is list_panes' answer: the panes, or the error variant.
type ListPanesOutput struct {
	Panes []Pane         `json:"panes"`
	Error *TextWaitError `json:"error,omitempty"`
}

// ListPanes lists the panes of a tmux server on its host's task queue. No
// worker on that queue within ListPanesStartTimeout is a tmux_unavailable
// answer, not a hang. It is not retried: the caller asks again.
func ListPanes(ctx workflow.Context, in ListPanesInput) (ListPanesOutput, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              in.HostQueue,
		ScheduleToStartTimeout: ListPanesStartTimeout,
		StartToCloseTimeout:    listPanesRunTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var out ListPanesOutput
	err := workflow.ExecuteActivity(actx, ListPanesActivityName, in).Get(ctx, &out)
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return ListPanesOutput{Panes: []Pane{}, Error: &TextWaitError{
			Code: TextErrTmuxUnavailable, Effects: "none", Retryable: true,
			Message: fmt.Sprintf("no worker on the tmux host (task queue %s) listed the panes in time", in.HostQueue),
		}}, nil
	}
	return out, err
}
