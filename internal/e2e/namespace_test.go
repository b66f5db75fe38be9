package e2e

import (
	"io"
	"log/slog"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/engine"
	"github.com/durawait/durawait/workflows"
)

// bareEngine starts a Temporal engine on dir whose namespace has none of
// durawait's search attributes: a cluster nobody prepared, or the data dir
// of the previous release.
func bareEngine(t *testing.T, dir string) *engine.Engine {
	t.Helper()
	e, err := engine.Start(engine.Options{DataDir: dir, Namespace: "default",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError})
	require.NoError(t, err)
	return e
}

// On a cluster whose namespace lacks the search attributes, durawait
// refuses to start (rather than stall every workflow task) and prints the
// exact commands that create them.
func TestAClusterWithoutTheSearchAttributesIsRefusedWithTheCreateLines(t *testing.T) {
	w := newWorkspace(t)
	e := bareEngine(t, w.path("cluster"))
	defer e.Stop()
	config := w.writeConfig(w.demoServer("demo"))
	for _, role := range []string{"worker", "front"} {
		cmd := exec.Command(bin.durawait, role, "--config", config, "--http", freeAddr(t), "--temporal", e.Addr())
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s must not start:\n%s", role, out)
		assert.Contains(t, string(out), "the namespace lacks durawait's search attributes", role)
		for _, name := range workflows.SearchAttributeNames {
			assert.Contains(t, string(out), "temporal operator search-attribute create --namespace default --name "+name+" --type Keyword", role)
		}
	}
}

// A data dir created by the previous release (its namespace has no
// search attributes) is upgraded at boot: waits start, upsert and are found.
func TestADataDirOfThePreviousReleaseGetsTheSearchAttributes(t *testing.T) {
	w := newWorkspace(t)
	bareEngine(t, w.path("data")).Stop()

	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	w.write("job", "READY")
	require.Equal(t, "matched", c.waitFor(t, readFileWait(w.path("job"), nil)).Reason)
	tc := temporalClient(t, w.owner().Engine)
	eventually(t, "the wait to be found by its state", func() bool {
		return len(found(t, tc, `DurawaitTool = "wait_for" AND DurawaitState = "matched"`)) == 1
	})
	// The catalog workflow has a tool and no state: IS NULL (documented for
	// waits of the previous release) works on the embedded engine.
	eventually(t, "the catalog to be found by IS NULL", func() bool {
		return len(found(t, tc, `DurawaitTool = "internal" AND DurawaitState IS NULL`)) == 1
	})
}
