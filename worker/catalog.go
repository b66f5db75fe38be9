package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/workflows"
)

// CatalogPublisher publishes a worker's downstream catalog on the catalog
// workflow of its task queue, where the front ends read it: once at start
// and again after every Changed.
type CatalogPublisher struct {
	client    client.Client
	taskQueue string
	snapshot  func(context.Context) (workflows.DownstreamCatalog, error)
	logger    *slog.Logger
	changed   chan struct{}
}

// NewCatalogPublisher publishes what snapshot returns on taskQueue's catalog
// workflow.
func NewCatalogPublisher(c client.Client, taskQueue string, snapshot func(context.Context) (workflows.DownstreamCatalog, error), logger *slog.Logger) *CatalogPublisher {
	p := &CatalogPublisher{client: c, taskQueue: taskQueue, snapshot: snapshot, logger: logger, changed: make(chan struct{}, 1)}
	p.Changed()
	return p
}

// Changed asks for the catalog to be published again. It never blocks;
// changes that come while a publication is pending are published together.
func (p *CatalogPublisher) Changed() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Publication retry delays, when Temporal cannot be reached.
const (
	minPublishRetry = 500 * time.Millisecond
	maxPublishRetry = 30 * time.Second
)

// Run publishes the catalog whenever it changed, until ctx ends. A failed
// publication is retried with growing delays.
func (p *CatalogPublisher) Run(ctx context.Context) {
	retry := minPublishRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.changed:
		}
		if err := p.publish(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.logger.Warn("could not publish the downstream catalog; retrying", "error", err, "in", retry.String())
			p.Changed()
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			retry = min(2*retry, maxPublishRetry)
			continue
		}
		retry = minPublishRetry
	}
}

// publish signals the latest catalog, starting the catalog workflow when
// it does not run.
func (p *CatalogPublisher) publish(ctx context.Context) error {
	cat, err := p.snapshot(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = p.client.SignalWithStartWorkflow(ctx, workflows.CatalogWorkflowID(p.taskQueue), workflows.CatalogSignalName, cat,
		client.StartWorkflowOptions{
			TaskQueue:             p.taskQueue,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			StaticSummary:         "downstream catalog of task queue " + p.taskQueue,
			TypedSearchAttributes: temporal.NewSearchAttributes(workflows.KeyTool.ValueSet(workflows.ToolInternal)),
		}, workflows.CatalogWorkflowName, workflows.DownstreamCatalog{})
	if err != nil {
		return fmt.Errorf("signal the catalog workflow %s: %w", workflows.CatalogWorkflowID(p.taskQueue), err)
	}
	return nil
}
