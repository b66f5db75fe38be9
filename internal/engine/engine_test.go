package engine

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A port taken between its pick and the engine's bind (another process
// took it) makes the engine start again on other ports, not fail.
func TestEngineStartsAgainWhenAPickedPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	picks := 0
	pick := func(ip string) (int, error) {
		picks++
		if picks == 2 { // the first internal port of the first attempt: the frontend's HTTP API
			return taken.Addr().(*net.TCPAddr).Port, nil
		}
		return freePort(ip)
	}
	e, err := Start(Options{
		DataDir: t.TempDir(), Namespace: "default", pickPort: pick,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err)
	defer e.Stop()
	assert.Greater(t, picks, 5, "a second attempt picked new ports")
	c, err := net.Dial("tcp", e.Addr())
	require.NoError(t, err, "the frontend listens")
	c.Close()
}

// The engine's span exporters are durawait's: the server's stock provider,
// which reads the OTEL_* environment and sets the process-wide OTel error
// handler, is never called. It refuses OTEL_TRACES_EXPORTER=console.
func TestTheStockSpanExporterProviderIsNotCalled(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	var handled []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { handled = append(handled, err) }))
	exp := tracetest.NewInMemoryExporter()
	e, err := Start(Options{
		DataDir: t.TempDir(), Namespace: "default", SpanExporter: exp,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err, "the stock provider refuses OTEL_TRACES_EXPORTER=console")
	defer e.Stop()
	otel.Handle(errors.New("mine"))
	assert.Equal(t, []error{errors.New("mine")}, handled, "the error handler set before the start is still the process's")
}
