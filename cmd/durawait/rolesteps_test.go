package main

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// The steps run in the order of the table at runRoles: each reads what the
// ones before it filled.
func TestTheStartStepsRunInTheirOrder(t *testing.T) {
	var names []string
	for _, s := range newProcess(roles{}, stepConfig(t), io.Discard).startSteps() {
		names = append(names, s.name)
	}
	assert.Equal(t, []string{"startTelemetry", "startPprof", "listenHTTP", "startEngine", "dialTemporal", "prepareNamespace", "startWorker", "startFront"}, names)
}

// checkRoles, before any step: only serve embeds an engine; --temporal
// turns the engine off and is the address the steps connect to; the
// daemon adapts the configuration; a front end off loopback needs
// authentication.
func TestCheckRolesDecidesBeforeAnyStep(t *testing.T) {
	for _, name := range []string{"worker", "front"} {
		p := newProcess(roles{worker: name == "worker", front: name == "front"}, stepConfig(t), io.Discard)
		err := p.checkRoles(name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "durawait "+name+" needs a Temporal cluster: --temporal HOST:PORT")
	}

	serve := newProcess(roles{engine: true, worker: true, front: true}, stepConfig(t), io.Discard)
	require.NoError(t, serve.checkRoles("serve"))
	assert.True(t, serve.roles.engine, "serve embeds the engine")
	assert.Empty(t, serve.target.addr, "startEngine fills it")

	cluster := newProcess(roles{engine: true, worker: true, front: true}, stepConfig(t, "--temporal", "temporal.example:7233"), io.Discard)
	require.NoError(t, cluster.checkRoles("serve"))
	assert.False(t, cluster.roles.engine, "serve on a cluster embeds no engine")
	assert.Equal(t, "temporal.example:7233", cluster.target.addr)

	daemon := newProcess(roles{engine: true, worker: true, front: true, daemon: true}, stepConfig(t, "--stdio", "--engine-port", "0"), io.Discard)
	require.NoError(t, daemon.checkRoles("serve"))
	assert.False(t, daemon.cfg.Stdio, "the daemon serves HTTP")
	assert.Equal(t, "127.0.0.1:0", daemon.cfg.HTTP, "on a loopback port of its own")

	open := stepConfig(t, "--temporal", "temporal.example:7233", "--http", "0.0.0.0:8765")
	err := newProcess(roles{front: true}, open, io.Discard).checkRoles("front")
	require.Error(t, err, "a front end off loopback without authentication")
	assert.Contains(t, err.Error(), "configuration: ")
	assert.Contains(t, err.Error(), "is not a loopback address")
	assert.NoError(t, newProcess(roles{worker: true}, open, io.Discard).checkRoles("worker"), "a worker serves no MCP")
}

// A step whose roles do not include its part does nothing and fills
// nothing, whatever the steps before it did.
func TestStepsOutsideTheRolesDoNothing(t *testing.T) {
	p := newProcess(roles{}, stepConfig(t, "--stdio"), io.Discard)
	for _, step := range []startStep{{"listenHTTP", p.listenHTTP}, {"startEngine", p.startEngine}, {"startWorker", p.startWorker}, {"startFront", p.startFront}, {"startPprof", p.startPprof}} {
		stop, err := step.start(t.Context())
		require.NoError(t, err, step.name)
		assert.Nil(t, stop, step.name)
	}
	assert.Nil(t, p.http, "--stdio listens nowhere")
	assert.Empty(t, p.target, "no engine")
	assert.Empty(t, p.pprofAddr, "no --pprof")
	assert.Nil(t, p.worker)
	assert.Nil(t, p.front)
}

// A step run before the one that fills what it needs says which, instead
// of using it unset (a nil client, an empty address).
func TestAStepNamesWhatItNeedsOfTheStepsBefore(t *testing.T) {
	lazy, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(lazy.Close)
	for _, tc := range []struct {
		name string
		p    *process
		step func(*process) startStep
		want string
	}{
		{"dialTemporal without an address", newProcess(roles{worker: true}, stepConfig(t), io.Discard),
			func(p *process) startStep { return startStep{"", p.dialTemporal} }, "dialTemporal needs a Temporal address"},
		{"prepareNamespace without a client", newProcess(roles{worker: true}, stepConfig(t), io.Discard),
			func(p *process) startStep { return startStep{"", p.prepareNamespace} }, "prepareNamespace needs dialTemporal's client"},
		{"startWorker without a client", newProcess(roles{worker: true}, stepConfig(t), io.Discard),
			func(p *process) startStep { return startStep{"", p.startWorker} }, "startWorker needs dialTemporal's client"},
		{"startFront without a client", newProcess(roles{front: true}, stepConfig(t), io.Discard),
			func(p *process) startStep { return startStep{"", p.startFront} }, "startFront needs dialTemporal's client"},
		{"startFront of serve without the worker's side", withClient(newProcess(roles{worker: true, front: true}, stepConfig(t), io.Discard), lazy),
			func(p *process) startStep { return startStep{"", p.startFront} }, "startFront needs startWorker's side"},
	} {
		stop, err := tc.step(tc.p).start(t.Context())
		require.Error(t, err, tc.name)
		assert.Nil(t, stop, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		assert.Contains(t, err.Error(), "out of order", tc.name)
	}

	p := newProcess(roles{worker: true}, stepConfig(t), io.Discard)
	err = p.serve(t.Context(), nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "serve needs dialTemporal's client")
}

// withClient is p with tc as dialTemporal's client.
func withClient(p *process, tc client.Client) *process {
	p.temporal = tc
	return p
}

// The parts stop in reverse order of their start; a step with nothing to
// stop adds nothing.
func TestStopsRunInReverseOrder(t *testing.T) {
	var order []int
	var s stops
	for i := range 3 {
		s.add(func() { order = append(order, i) })
		s.add(nil)
	}
	require.Len(t, s, 3)
	s.run()
	assert.Equal(t, []int{2, 1, 0}, order)
}

// startTelemetry needs nothing before it; a bad OTEL_* setting fails the
// step, naming the variable, and fills nothing.
func TestStartTelemetryFailsOnABadSetting(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
	p := newProcess(roles{worker: true}, stepConfig(t), io.Discard)
	stop, err := p.startTelemetry(t.Context())
	require.Error(t, err)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "OTEL_TRACES_EXPORTER")
	assert.Nil(t, p.telemetry)
}

// A --pprof address in use fails the step, naming it.
func TestStartPprofOnATakenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	p := newProcess(roles{worker: true}, stepConfig(t, "--pprof", ln.Addr().String()), io.Discard)
	stop, err := p.startPprof(t.Context())
	require.Error(t, err)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "pprof: listen on "+ln.Addr().String())
	assert.Empty(t, p.pprofAddr)
}
