package main

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/durawait/durawait/internal/config"
)

// fakeTemporal is a Temporal frontend in the test's process that answers
// what the start steps ask of one: a client's dial (GetSystemInfo), and
// the namespace's check or preparation (DescribeNamespace,
// ListSearchAttributes, AddSearchAttributes, CountWorkflowExecutions,
// UpdateNamespace). Anything else is Unimplemented.
type fakeTemporal struct {
	addr string

	mu sync.Mutex
	// refuseDial, when set, is GetSystemInfo's error.
	refuseDial error
	// namespaces are those that exist, with their retention.
	namespaces map[string]time.Duration
	// attrs are the registered custom search attributes.
	attrs map[string]enumspb.IndexedValueType
	// refuseAdd, when set, is AddSearchAttributes' error.
	refuseAdd error
}

// startFakeTemporal serves a fake frontend on a loopback port until the
// test ends; namespace "default" exists, with no search attribute.
func startFakeTemporal(t *testing.T) *fakeTemporal {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeTemporal{addr: ln.Addr().String(), namespaces: map[string]time.Duration{"default": 72 * time.Hour},
		attrs: map[string]enumspb.IndexedValueType{}}
	srv := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(srv, fakeWorkflowService{f: f})
	operatorservice.RegisterOperatorServiceServer(srv, fakeOperatorService{f: f})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return f
}

// registered is a copy of the registered search attributes.
func (f *fakeTemporal) registered() map[string]enumspb.IndexedValueType {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.attrs)
}

// register registers attrs.
func (f *fakeTemporal) register(attrs map[string]enumspb.IndexedValueType) {
	f.mu.Lock()
	defer f.mu.Unlock()
	maps.Copy(f.attrs, attrs)
}

// retention is namespace ns's retention.
func (f *fakeTemporal) retention(ns string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.namespaces[ns]
}

type fakeWorkflowService struct {
	workflowservice.UnimplementedWorkflowServiceServer
	f *fakeTemporal
}

func (s fakeWorkflowService) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.refuseDial != nil {
		return nil, s.f.refuseDial
	}
	return &workflowservice.GetSystemInfoResponse{ServerVersion: "1.0.0-fake"}, nil
}

func (s fakeWorkflowService) DescribeNamespace(_ context.Context, req *workflowservice.DescribeNamespaceRequest) (*workflowservice.DescribeNamespaceResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	retention, ok := s.f.namespaces[req.GetNamespace()]
	if !ok {
		return nil, serviceerror.ToStatus(serviceerror.NewNamespaceNotFound(req.GetNamespace())).Err()
	}
	return &workflowservice.DescribeNamespaceResponse{Config: &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)}}, nil
}

func (s fakeWorkflowService) UpdateNamespace(_ context.Context, req *workflowservice.UpdateNamespaceRequest) (*workflowservice.UpdateNamespaceResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.namespaces[req.GetNamespace()] = req.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	return &workflowservice.UpdateNamespaceResponse{}, nil
}

func (s fakeWorkflowService) CountWorkflowExecutions(context.Context, *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return &workflowservice.CountWorkflowExecutionsResponse{}, nil
}

type fakeOperatorService struct {
	operatorservice.UnimplementedOperatorServiceServer
	f *fakeTemporal
}

func (s fakeOperatorService) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: s.f.registered()}, nil
}

func (s fakeOperatorService) AddSearchAttributes(_ context.Context, req *operatorservice.AddSearchAttributesRequest) (*operatorservice.AddSearchAttributesResponse, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.refuseAdd != nil {
		return nil, s.f.refuseAdd
	}
	maps.Copy(s.f.attrs, req.GetSearchAttributes())
	return &operatorservice.AddSearchAttributesResponse{}, nil
}

// permissionDenied is an error a Temporal client does not retry.
var permissionDenied = status.Error(codes.PermissionDenied, "not for you")

// quietLogger discards what it is told.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// noTemporalEnv unsets the TEMPORAL_* variables and points the Temporal
// config file at none, for the test's duration.
func noTemporalEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE", "TEMPORAL_TLS",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_NAME"} {
		t.Setenv(k, "")
	}
	t.Setenv("TEMPORAL_CONFIG_FILE", "/nonexistent/temporal.toml")
}

// stepConfig is the configuration serve's flags args make, with a data
// dir of the test's own and no Temporal from the environment.
func stepConfig(t *testing.T, args ...string) config.Config {
	t.Helper()
	noTemporalEnv(t)
	cfg, err := configFrom(append([]string{"--data-dir", t.TempDir()}, args...))
	require.NoError(t, err)
	return cfg
}

// clusterProcess is a process of roles r on the fake cluster f, its
// address from --temporal (checkRoles run), before its steps.
func clusterProcess(t *testing.T, f *fakeTemporal, r roles, args ...string) *process {
	t.Helper()
	p := newProcess(r, stepConfig(t, append([]string{"--temporal", f.addr}, args...)...), io.Discard)
	require.NoError(t, p.checkRoles("test"))
	return p
}

// dialed is p with dialTemporal run, closed when the test ends.
func dialed(t *testing.T, p *process) *process {
	t.Helper()
	stop, err := p.dialTemporal(t.Context())
	require.NoError(t, err)
	t.Cleanup(stop)
	return p
}
