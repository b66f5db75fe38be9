package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// startDevServer runs the Temporal CLI's development server (in-memory
// SQLite, no Web UI, plain gRPC on a free port) and returns its address
// once it answers a health check; it is killed when the test ends.
func startDevServer(t *testing.T) string {
	t.Helper()
	cli := temporalCLI(t)
	_, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", port)
	log := &syncBuffer{}
	cmd := exec.Command(cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", port,
		"--namespace", "default", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("temporal server start-dev log:\n%s", tail(log.String(), 20000))
		}
	})
	eventually(t, "the dev server to answer", func() bool {
		select {
		case <-done:
			t.Fatalf("temporal server start-dev exited:\n%s", log.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := client.DialContext(ctx, client.Options{HostPort: addr})
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err == nil
	})
	return addr
}

// The roles scenario on the Temporal CLI's dev server: a Temporal started
// outside durawait, no TLS, the namespace "default". The lighter variant of
// TestRolesOnAProductionCluster, run by make test.
func TestRolesOnTheDevServer(t *testing.T) {
	addr := startDevServer(t)
	runRolesScenario(t, temporalTarget{
		Addr: addr, Namespace: "default",
		connect: func(int) (flags, env []string) { return []string{"--temporal", addr}, nil },
		connected: func(int) []string {
			return []string{"addr=" + addr, "namespace=default", "tls=false", "addr_from=flags"}
		},
		client:     temporalClient(t, addr),
		cliConnect: []string{"--address " + addr},
	})
}

// temporalCLI is the Temporal CLI: $DURAWAIT_TEMPORAL_CLI, else bin/temporal
// of the repository (make tools builds it), else temporal on the PATH.
func temporalCLI(t testing.TB) string {
	t.Helper()
	if path := os.Getenv("DURAWAIT_TEMPORAL_CLI"); path != "" {
		return path
	}
	if path, err := exec.LookPath("../../bin/temporal"); err == nil {
		return path
	}
	path, err := exec.LookPath("temporal")
	require.NoError(t, err, "the Temporal CLI is needed: make tools builds it into bin/temporal")
	return path
}
