package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/workflows"
)

// startEngine first takes the data dir: one that another process holds
// fails the step before any engine starts, fills nothing, and leaves the
// holder's record alone.
func TestStartEngineLeavesADataDirInUseAlone(t *testing.T) {
	if !hasEmbeddedEngine {
		t.Skip("a build without the embedded engine (engine_none_test.go)")
	}
	p := newProcess(roles{engine: true, worker: true, front: true}, stepConfig(t, "--engine-port", "0", "--no-ui"), io.Discard)
	require.NoError(t, p.checkRoles("serve"))
	other, err := datadir.Acquire(p.cfg.DataDir, datadir.Owner{PID: 4242, HTTP: "http://127.0.0.1:1/mcp", StartedAt: time.Now()})
	require.NoError(t, err)
	defer other.Release()

	stop, err := p.startEngine(t.Context())
	var inUse *datadir.InUseError
	require.True(t, errors.As(err, &inUse), "%v", err)
	assert.Nil(t, stop)
	assert.Empty(t, p.target, "no engine address")
	owner, held, err := datadir.Inspect(p.cfg.DataDir)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 4242, owner.PID)
}

// dialTemporal connects to the target checkRoles (or startEngine) set and
// fills p.temporal; on a cluster it logs where each setting came from.
func TestDialTemporalFillsTheClient(t *testing.T) {
	f := startFakeTemporal(t)
	var log bytes.Buffer
	p := newProcess(roles{worker: true}, stepConfig(t, "--temporal", f.addr), &log)
	require.NoError(t, p.checkRoles("worker"))
	stop, err := p.dialTemporal(t.Context())
	require.NoError(t, err)
	require.NotNil(t, stop)
	require.NotNil(t, p.temporal)
	_, err = p.temporal.WorkflowService().GetSystemInfo(t.Context(), nil)
	assert.NoError(t, err, "the client reaches the target")
	assert.Contains(t, log.String(), `msg="connected to Temporal" addr=`+f.addr)
	assert.Contains(t, log.String(), "addr_from=flags")
	stop()
}

// A refused dial fails the step with the address and how it connected,
// and fills nothing.
func TestDialTemporalSaysHowItConnected(t *testing.T) {
	f := startFakeTemporal(t)
	f.refuseDial = permissionDenied
	p := clusterProcess(t, f, roles{front: true})
	stop, err := p.dialTemporal(t.Context())
	require.Error(t, err)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "connect to Temporal at "+f.addr+" (address from flags; plain gRPC, no TLS): ")
	assert.Contains(t, err.Error(), "not for you")
	assert.Nil(t, p.temporal)
}

// The embedded engine lets in only the data dir's certificate: without
// startEngine's credentials the dial is not even tried.
func TestDialTemporalToTheEngineNeedsItsCredentials(t *testing.T) {
	f := startFakeTemporal(t)
	p := newProcess(roles{engine: true, worker: true, front: true}, stepConfig(t), io.Discard)
	p.target = temporalTarget{addr: f.addr}
	stop, err := p.dialTemporal(t.Context())
	require.Error(t, err)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "connect to the embedded engine: ")
	assert.Nil(t, p.temporal)
}

func TestConnectionNoteSaysTLSAndAPIKey(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--temporal", "h:7233"}, " (address from flags; plain gRPC, no TLS)"},
		{[]string{"--temporal", "h:7233", "--tls"}, " (address from flags; TLS)"},
		{[]string{"--temporal", "h:7233", "--api-key", "k"}, " (address from flags; TLS and API key)"},
	} {
		p := newProcess(roles{worker: true}, stepConfig(t, tc.args...), io.Discard)
		require.NoError(t, p.checkRoles("worker"))
		assert.Equal(t, tc.want, p.connectionNote(), "%v", tc.args)
	}
	engine := newProcess(roles{engine: true}, stepConfig(t), io.Discard)
	assert.Empty(t, engine.connectionNote(), "the embedded engine needs no note")
}

// On a cluster, prepareNamespace only checks: a missing namespace or
// search attribute fails the step with the lines that create them, and
// the cluster is left as it was.
func TestPrepareNamespaceChecksACluster(t *testing.T) {
	f := startFakeTemporal(t)
	p := dialed(t, clusterProcess(t, f, roles{worker: true}))
	stop, err := p.prepareNamespace(t.Context())
	require.Error(t, err)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "Temporal at "+f.addr+" (address from flags; plain gRPC, no TLS): the namespace lacks durawait's search attributes")
	for _, name := range workflows.SearchAttributeNames {
		assert.Contains(t, err.Error(), "temporal operator search-attribute create --namespace default --name "+name+" --type Keyword --address "+f.addr)
	}
	assert.Empty(t, f.registered(), "a cluster is never changed")

	other := dialed(t, clusterProcess(t, f, roles{worker: true}, "--namespace", "team-x"))
	_, err = other.prepareNamespace(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the namespace does not exist: "team-x"`)

	f.register(workflows.SearchAttributes())
	_, err = p.prepareNamespace(t.Context())
	require.NoError(t, err, "a namespace with every search attribute")
	assert.Equal(t, 72*time.Hour, f.retention("default"), "a cluster's retention is its operator's")
}

// On the embedded engine, prepareNamespace registers the search
// attributes an earlier release's data dir lacks and sets the retention;
// a refusal fails the step, naming the engine.
func TestPrepareNamespaceRegistersOnTheEmbeddedEngine(t *testing.T) {
	f := startFakeTemporal(t)
	p := dialed(t, clusterProcess(t, f, roles{worker: true}))
	p.roles.engine = true // the fake stands for the engine, reached as a cluster
	_, err := p.prepareNamespace(t.Context())
	require.NoError(t, err)
	assert.Equal(t, workflows.SearchAttributes(), f.registered())
	assert.Equal(t, p.cfg.Retention(), f.retention("default"))

	f2 := startFakeTemporal(t)
	f2.refuseAdd = permissionDenied
	refused := dialed(t, clusterProcess(t, f2, roles{worker: true}))
	refused.roles.engine = true
	_, err = refused.prepareNamespace(t.Context())
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "embedded engine: register search attributes "), err.Error())
}
