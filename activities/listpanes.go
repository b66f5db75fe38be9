package activities

import (
	"context"
	"errors"

	"github.com/durawait/durawait/activities/tmuxwatch"
	"github.com/durawait/durawait/workflows"
)

// ListPanes lists the panes of a tmux server on this host. A tmux failure
// with a code (no server running, tmux not installed) is the error variant
// of the answer; any other failure is tmux_unavailable with its message.
func ListPanes(ctx context.Context, in workflows.ListPanesInput) (workflows.ListPanesOutput, error) {
	panes, err := tmuxwatch.Server{Socket: in.Socket}.ListPanes(ctx)
	if err != nil {
		e := workflows.TextWaitError{Code: workflows.TextErrTmuxUnavailable, Message: err.Error(), Effects: "none", Retryable: true}
		var te *tmuxwatch.Error
		if errors.As(err, &te) {
			e.Code, e.Message, e.Retryable = te.Code, te.Message, te.Retryable
		}
		return workflows.ListPanesOutput{Panes: []workflows.Pane{}, Error: &e}, nil
	}
	if panes == nil {
		panes = []workflows.Pane{}
	}
	return workflows.ListPanesOutput{Panes: panes}, nil
}
