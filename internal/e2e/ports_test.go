package e2e

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

// fakeTemporal answers GetSystemInfo as a Temporal frontend does.
type fakeTemporal struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (fakeTemporal) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{ServerVersion: "1.0.0-fake"}, nil
}

// serveFails runs `durawait serve` with extra flags, expecting it to exit
// with status 1 by itself; it returns what it printed.
func serveFails(t *testing.T, w *workspace, config string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	args := append([]string{"serve", "--config", config, "--http", freeAddr(t)}, extra...)
	cmd := exec.CommandContext(ctx, bin.durawait, args...)
	cmd.Env = append(os.Environ(), w.env()...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "durawait should fail: %v\n%s", err, out)
	assert.Equal(t, 1, exit.ExitCode(), string(out))
	return string(out)
}

func listenOn(t *testing.T) (net.Listener, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return l, port
}

// A taken engine, UI or MCP port ends `durawait serve` with one line naming
// the port and the flag that changes it, and the --temporal flag that would use
// a Temporal server found there.
func TestPortsInUseReadClearly(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))

	_, busy := listenOn(t)
	out := serveFails(t, w, config, "--engine-port", busy, "--no-ui")
	assert.Contains(t, out, "the embedded Temporal engine's port 127.0.0.1:"+busy+" is in use; run with --engine-port PORT")
	assert.NotContains(t, out, "--temporal")
	assert.NotContains(t, out, "panic")
	var errLines []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "durawait: ") {
			errLines = append(errLines, line)
		}
	}
	require.Len(t, errLines, 1, out)
	assert.Contains(t, errLines[0], "--engine-port PORT", "the port and the flag, on one line")

	l, temporalPort := listenOn(t)
	gs := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(gs, fakeTemporal{})
	go func() { _ = gs.Serve(l) }()
	t.Cleanup(gs.Stop)
	out = serveFails(t, w, config, "--engine-port", temporalPort, "--no-ui")
	assert.Contains(t, out, "(a Temporal server answers at 127.0.0.1:"+temporalPort+")")
	assert.Contains(t, out, "--temporal 127.0.0.1:"+temporalPort)

	_, busyUI := listenOn(t)
	out = serveFails(t, w, config, "--engine-port", "0", "--ui-port", busyUI)
	assert.Contains(t, out, "the Temporal Web UI's port 127.0.0.1:"+busyUI+" is in use; run with --ui-port PORT (0: any free port), or --no-ui")
	assert.NotContains(t, out, "FATAL")

	// The MCP address names its flag too, once it has waited out a crashed
	// process's sockets (listenReleased).
	_, busyHTTP := listenOn(t)
	out = serveFails(t, w, config, "--engine-port", "0", "--no-ui", "--http", "127.0.0.1:"+busyHTTP)
	assert.Contains(t, out, "listen on 127.0.0.1:"+busyHTTP+": ")
	assert.Contains(t, out, "still in use after 3s: another process listens there); run with --http HOST:PORT (or set http in the config) to listen elsewhere")
}
