package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/durawait/durawait/workflows"
)

// The publisher signal-starts the task queue's catalog workflow with the
// snapshot at start and after each change, and retries a failed
// publication.
func TestCatalogPublisherPublishesAtStartAndOnChange(t *testing.T) {
	tc := &mocks.Client{}
	published := make(chan workflows.DownstreamCatalog, 10)
	var mu sync.Mutex
	version := 0
	snapshot := func(context.Context) (workflows.DownstreamCatalog, error) {
		mu.Lock()
		defer mu.Unlock()
		return workflows.DownstreamCatalog{TmuxHostQueue: "v" + string(rune('0'+version))}, nil
	}
	call := tc.On("SignalWithStartWorkflow", mock.Anything, "durawait-catalog/q", workflows.CatalogSignalName, mock.Anything,
		mock.Anything, workflows.CatalogWorkflowName, workflows.DownstreamCatalog{})
	failures := 1
	call.Run(func(args mock.Arguments) {
		opts := args.Get(4).(client.StartWorkflowOptions)
		assert.Equal(t, "q", opts.TaskQueue)
		if failures > 0 {
			failures--
			call.ReturnArguments = mock.Arguments{nil, errors.New("engine unavailable")}
			return
		}
		call.ReturnArguments = mock.Arguments{nil, nil}
		published <- args.Get(3).(workflows.DownstreamCatalog)
	})

	p := NewCatalogPublisher(tc, "q", snapshot, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	assert.Equal(t, "v0", (<-published).TmuxHostQueue, "published at start, after one failed attempt")
	mu.Lock()
	version = 1
	mu.Unlock()
	p.Changed()
	assert.Equal(t, "v1", (<-published).TmuxHostQueue, "published again on a change")
}
