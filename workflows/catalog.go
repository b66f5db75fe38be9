package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"
)

// Names of the catalog workflow, its signal and its query.
const (
	CatalogWorkflowName = InternalTypePrefix + "DownstreamCatalog"
	CatalogSignalName   = "publish"
	CatalogQueryName    = "catalog"
)

// catalogSignalsPerRun is how many catalogs one run of the catalog
// workflow takes before it continues as new, keeping its history short.
const catalogSignalsPerRun = 200

// DownstreamCatalog is what a worker offers the front ends: its downstream
// servers and their tools, and the task queue of its tmux host.
type DownstreamCatalog struct {
	// Servers in configuration order.
	Servers []DownstreamServer `json:"servers"`
	// TmuxHostQueue is the task queue of the worker's tmux host; empty when
	// the worker runs no tmux tools.
	TmuxHostQueue string `json:"tmuxHostQueue,omitempty"`
}

// DownstreamServer is one downstream MCP server of a worker.
type DownstreamServer struct {
	Name string `json:"name"`
	// Expose re-exposes the server's tools to durawait's clients.
	Expose bool `json:"expose"`
	// ProbeTools are the tools wait_for may probe beyond the read-only ones
	// ("*": all of them): the server's probe_tools.
	ProbeTools []string `json:"probeTools,omitempty"`
	// Tools as last listed, each tool's JSON exactly as the server sent it
	// (raw schemas kept). A server that is down keeps its last known tools.
	Tools []json.RawMessage `json:"tools"`
	// Error is the last connection error; empty while connected.
	Error string `json:"error,omitempty"`
}

// Catalog keeps the latest DownstreamCatalog its workers signal and answers
// the CatalogQueryName query with it. It runs until cancelled, continuing as
// new with the latest catalog when its history grows.
func Catalog(ctx workflow.Context, latest DownstreamCatalog) error {
	if err := workflow.SetQueryHandler(ctx, CatalogQueryName, func() (DownstreamCatalog, error) {
		return latest, nil
	}); err != nil {
		return err
	}
	signals := workflow.GetSignalChannel(ctx, CatalogSignalName)
	for n := 0; ; n++ {
		if n >= catalogSignalsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// Take every signal already delivered, so none is lost.
			for {
				var next DownstreamCatalog
				if !signals.ReceiveAsync(&next) {
					break
				}
				latest = next
			}
			return workflow.NewContinueAsNewError(ctx, CatalogWorkflowName, latest)
		}
		var next DownstreamCatalog
		cancelled := false
		workflow.NewSelector(ctx).
			AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &next) }).
			AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { cancelled = true }).
			Select(ctx)
		if cancelled {
			return ctx.Err()
		}
		latest = next
	}
}
