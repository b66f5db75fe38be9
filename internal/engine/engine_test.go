package engine

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
