package workflows

import "go.temporal.io/sdk/workflow"

// Definition is one workflow type: its function and the durable name it is
// registered under.
type Definition struct {
	Fn   any
	Name string
}

// Definitions lists every workflow type a durawait worker runs, in a new
// slice. The replay test requires a recorded history of each.
func Definitions() []Definition {
	return []Definition{
		{WaitFor, WaitForWorkflowName},
		{AgentInvocation, AgentWorkflowName},
		{WaitForText, WaitForTextWorkflowName},
		{CallDownstreamTool, CallDownstreamToolWorkflowName},
		{ListPanes, ListPanesWorkflowName},
		{WaitForEvent, WaitForEventWorkflowName},
		{EventLatch, EventLatchWorkflowName},
		{Catalog, CatalogWorkflowName},
		{HostLease, HostLeaseWorkflowName},
		{Catalog, LegacyCatalogWorkflowName},
		{HostLease, LegacyHostLeaseWorkflowName},
	}
}

// WorkflowRegistry is where workflows are registered: a worker, the test
// environment, or a workflow replayer.
type WorkflowRegistry interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
}

// RegisterWorkflows registers every workflow of Definitions on r under its
// durable name.
func RegisterWorkflows(r WorkflowRegistry) {
	for _, d := range Definitions() {
		r.RegisterWorkflowWithOptions(d.Fn, workflow.RegisterOptions{Name: d.Name})
	}
}
