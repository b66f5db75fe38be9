package namespace

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/durawait/durawait/internal/engine"
)

var (
	want  = map[string]enumspb.IndexedValueType{"DurawaitTool": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "DurawaitState": enumspb.INDEXED_VALUE_TYPE_KEYWORD}
	names = []string{"DurawaitTool", "DurawaitState"}
)

// startEngine starts an embedded engine on dir whose namespace was created
// with attrs (none: as the previous release created it).
func startEngine(t *testing.T, dir string, attrs map[string]enumspb.IndexedValueType) (Services, client.Client, func()) {
	t.Helper()
	e, err := engine.Start(engine.Options{DataDir: dir, Namespace: "default", SearchAttributes: attrs,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError})
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: e.Addr(), Namespace: "default", ConnectionOptions: client.ConnectionOptions{TLS: e.ClientTLS()}})
	require.NoError(t, err)
	return Services{Operator: c.OperatorService(), Workflow: c.WorkflowService()}, c, func() { c.Close(); e.Stop() }
}

// A data dir created by the previous release (its namespace has no
// search attributes, 24 h retention) gets them and the configured
// retention at boot; a cluster that lacks them is refused with the exact
// create lines.
func TestAnEarlierNamespaceGetsTheSearchAttributesAndRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, c, stop := startEngine(t, t.TempDir(), nil)
	defer stop()

	err := CheckCluster(ctx, s, ClusterCheck{Namespace: "default", SearchAttributes: want, Names: names})
	require.ErrorIs(t, err, ErrMissingSearchAttributes)
	assert.Contains(t, err.Error(), "(DurawaitTool, DurawaitState)")
	assert.Contains(t, err.Error(), "temporal operator search-attribute create --namespace default --name DurawaitTool --type Keyword\n"+
		"temporal operator search-attribute create --namespace default --name DurawaitState --type Keyword\n")

	// A namespace the cluster does not have is named, with the commands
	// that create it and the attributes in it, connected as durawait is.
	err = CheckCluster(ctx, s, ClusterCheck{Namespace: "team-x", SearchAttributes: want, Names: names,
		Connect: "--address 10.0.0.1:7233 --tls-ca-path /ca.pem", Retention: 72 * time.Hour})
	require.ErrorIs(t, err, ErrNamespaceNotFound)
	assert.Contains(t, err.Error(), "temporal operator namespace create --namespace team-x --retention 72h --address 10.0.0.1:7233 --tls-ca-path /ca.pem\n"+
		"temporal operator search-attribute create --namespace team-x --name DurawaitTool --type Keyword --address 10.0.0.1:7233 --tls-ca-path /ca.pem\n"+
		"temporal operator search-attribute create --namespace team-x --name DurawaitState --type Keyword --address 10.0.0.1:7233 --tls-ca-path /ca.pem\n")

	require.NoError(t, PrepareEmbedded(ctx, s, EmbeddedOptions{Namespace: "default", SearchAttributes: want, Names: names, Retention: 72 * time.Hour}))
	require.NoError(t, CheckCluster(ctx, s, ClusterCheck{Namespace: "default", SearchAttributes: want, Names: names}), "every search attribute is registered")
	desc, err := s.Workflow.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)
	assert.Equal(t, 72*time.Hour, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())

	// A workflow upserts one at once: its workflow task is not refused
	// (an unknown attribute would stall it).
	w := worker.New(c, "upsert", worker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		return workflow.UpsertTypedSearchAttributes(ctx, temporal.NewSearchAttributeKeyKeyword("DurawaitState").ValueSet("running"))
	}, workflow.RegisterOptions{Name: "Upserts"})
	require.NoError(t, w.Start())
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "upserts", TaskQueue: "upsert"}, "Upserts")
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil), "the upsert right after registration is taken")
	wdesc, err := c.DescribeWorkflowExecution(ctx, "upserts", "")
	require.NoError(t, err)
	assert.Contains(t, wdesc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields(), "DurawaitState")

	// A workflow starts with them at once (the engine's caches know them)
	// and is found by them.
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w", TaskQueue: "none",
		TypedSearchAttributes: temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword("DurawaitTool").ValueSet("wait_for"))}, "SomeWorkflow")
	require.NoError(t, err)
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: `DurawaitTool = "wait_for"`})
		require.NoError(t, err)
		if len(resp.Executions) == 1 {
			break
		}
		require.NoError(t, ctx.Err(), "the workflow is never found by DurawaitTool")
		time.Sleep(50 * time.Millisecond)
	}

	// Idempotent: a second boot changes nothing and succeeds.
	require.NoError(t, PrepareEmbedded(ctx, s, EmbeddedOptions{Namespace: "default", SearchAttributes: want, Names: names, Retention: 72 * time.Hour}))
}

// A namespace created by this release has them from the start, with the
// retention given to the engine.
func TestANewNamespaceIsCreatedWithThemAndItsRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	e, err := engine.Start(engine.Options{DataDir: dir, Namespace: "default", SearchAttributes: want, Retention: 5 * time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError})
	require.NoError(t, err)
	defer e.Stop()
	c, err := client.Dial(client.Options{HostPort: e.Addr(), Namespace: "default", ConnectionOptions: client.ConnectionOptions{TLS: e.ClientTLS()}})
	require.NoError(t, err)
	defer c.Close()
	s := Services{Operator: c.OperatorService(), Workflow: c.WorkflowService()}
	missing, err := Missing(ctx, s.Operator, "default", want, names)
	require.NoError(t, err)
	assert.Empty(t, missing)
	desc, err := s.Workflow.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Hour, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
}

// A search attribute registered with another type is named apart, with
// no create line (it would fail "already exists"); the embedded engine
// refuses it rather than try to register it again.
func TestAnAttributeOfAnotherTypeIsNamedApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, _, stop := startEngine(t, t.TempDir(), map[string]enumspb.IndexedValueType{"DurawaitTool": enumspb.INDEXED_VALUE_TYPE_TEXT})
	defer stop()

	err := CheckCluster(ctx, s, ClusterCheck{Namespace: "default", SearchAttributes: want, Names: names})
	require.ErrorIs(t, err, ErrMissingSearchAttributes)
	require.ErrorIs(t, err, ErrSearchAttributeTypes)
	assert.Contains(t, err.Error(), "--name DurawaitState --type Keyword\n")
	assert.NotContains(t, err.Error(), "--name DurawaitTool")
	assert.Contains(t, err.Error(), "DurawaitTool is registered as Text, want Keyword")

	err = PrepareEmbedded(ctx, s, EmbeddedOptions{Namespace: "default", SearchAttributes: want, Names: names})
	require.ErrorIs(t, err, ErrSearchAttributeTypes)
	assert.Contains(t, err.Error(), "DurawaitTool is registered as Text, want Keyword")
}

// retentionService records the UpdateNamespace request.
type retentionService struct {
	workflowservice.WorkflowServiceClient
	update *workflowservice.UpdateNamespaceRequest
}

func (r *retentionService) DescribeNamespace(context.Context, *workflowservice.DescribeNamespaceRequest, ...grpc.CallOption) (*workflowservice.DescribeNamespaceResponse, error) {
	return &workflowservice.DescribeNamespaceResponse{Config: &namespacepb.NamespaceConfig{
		WorkflowExecutionRetentionTtl: durationpb.New(24 * time.Hour),
		BadBinaries:                   &namespacepb.BadBinaries{Binaries: map[string]*namespacepb.BadBinaryInfo{"abc": {Reason: "r"}}},
		CustomSearchAttributeAliases:  map[string]string{"Keyword01": "DurawaitTool"},
	}}, nil
}

func (r *retentionService) UpdateNamespace(_ context.Context, req *workflowservice.UpdateNamespaceRequest, _ ...grpc.CallOption) (*workflowservice.UpdateNamespaceResponse, error) {
	r.update = req
	return &workflowservice.UpdateNamespaceResponse{}, nil
}

// Setting the retention sends the retention alone, not the rest of the
// described config back.
func TestSetRetentionSendsOnlyTheRetention(t *testing.T) {
	ws := &retentionService{}
	require.NoError(t, setRetention(context.Background(), ws, "default", 72*time.Hour))
	require.NotNil(t, ws.update)
	assert.True(t, proto.Equal(&namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(72 * time.Hour)}, ws.update.GetConfig()),
		"sent %v", ws.update.GetConfig())
}

// A data dir of the commit before DurawaitTarget has ten Keyword
// attributes, DurawaitPane among them: a SQL visibility store's most. At
// boot the retired one is removed first, so the new one fits.
func TestARetiredAttributeMakesRoomForTheNewOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kw := enumspb.INDEXED_VALUE_TYPE_KEYWORD
	common := []string{"DurawaitTool", "DurawaitState", "DurawaitProbeTool", "DurawaitCaller", "DurawaitClient",
		"DurawaitSession", "DurawaitAgentProvider", "DurawaitAgentStatus", "DurawaitHost"}
	before, now := map[string]enumspb.IndexedValueType{"DurawaitPane": kw}, map[string]enumspb.IndexedValueType{"DurawaitTarget": kw}
	for _, name := range common {
		before[name], now[name] = kw, kw
	}
	s, _, stop := startEngine(t, t.TempDir(), before)
	defer stop()

	nowNames := append(append([]string{}, common...), "DurawaitTarget")
	require.NoError(t, PrepareEmbedded(ctx, s, EmbeddedOptions{Namespace: "default", SearchAttributes: now, Names: nowNames, Retired: []string{"DurawaitPane"}}))
	have, err := s.Operator.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	assert.NotContains(t, have.GetCustomAttributes(), "DurawaitPane")
	assert.Equal(t, kw, have.GetCustomAttributes()["DurawaitTarget"])
}
