package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"

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
	knownEngines.Store(e.Addr(), e.Credentials())
	return e
}

// On a cluster whose namespace lacks the search attributes, durawait
// refuses to start (rather than stall every workflow task) and prints the
// exact commands that create them; once they exist, its roles run there.
func TestAClusterWithoutTheSearchAttributesIsRefusedWithTheCreateLines(t *testing.T) {
	w := newWorkspace(t)
	e := bareEngine(t, w.path("cluster"))
	defer e.Stop()
	config := w.writeConfig(w.demoServer("demo"))
	// A namespace the cluster lacks is named, with the lines that create it
	// and the attributes in it; the address comes from TEMPORAL_ADDRESS
	// as from --temporal, and the lines connect the CLI the same way.
	cmd := exec.Command(bin.durawait, "worker", "--config", config, "--http", freeAddr(t), "--namespace", "team-x")
	creds := e.Credentials()
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+e.Addr(), "TEMPORAL_TLS_SERVER_CA_CERT_PATH="+creds.CA,
		"TEMPORAL_TLS_CLIENT_CERT_PATH="+creds.ClientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH="+creds.ClientKey)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the worker must not start:\n%s", out)
	assert.Contains(t, string(out), `the namespace does not exist: "team-x"`)
	assert.Contains(t, string(out), "(address from TEMPORAL_ADDRESS; TLS)")
	assert.Contains(t, string(out), "temporal operator namespace create --namespace team-x --retention 24h --address "+e.Addr()+" --tls --tls-ca-path "+creds.CA)
	for _, name := range workflows.SearchAttributeNames {
		assert.Contains(t, string(out), "temporal operator search-attribute create --namespace team-x --name "+name+" --type Keyword --address "+e.Addr()+" --tls --tls-ca-path "+creds.CA)
	}

	for _, role := range []string{"worker", "front"} {
		cmd := exec.Command(bin.durawait, append([]string{role, "--config", config, "--http", freeAddr(t), "--temporal", e.Addr()}, engineFlags(e.Addr())...)...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s must not start:\n%s", role, out)
		assert.Contains(t, string(out), "the namespace lacks durawait's search attributes", role)
		for _, name := range workflows.SearchAttributeNames {
			assert.Contains(t, string(out), "temporal operator search-attribute create --namespace default --name "+name+" --type Keyword", role)
		}
	}

	// The operator creates them (through the operator service, as those
	// lines do); then a worker and a front end, each its own process on
	// the cluster, serve a wait that the operator finds by its attributes,
	// through the visibility API and `durawait waits --temporal`.
	ctx := context.Background()
	tc := temporalClient(t, e.Addr())
	_, err = tc.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: "default", SearchAttributes: workflows.SearchAttributes()})
	require.NoError(t, err)
	w.startRole("worker", config, e.Addr())
	frontConfig := w.path("front.toml")
	require.NoError(t, os.WriteFile(frontConfig, []byte(fmt.Sprintf("data_dir = %q\n", w.path("front-data"))), 0o644))
	c := w.startRole("front", frontConfig, e.Addr()).client(t)
	eventually(t, "the front to list the worker's tools", func() bool { return listedTools(t, c)["read_file"] != "" })

	answer := make(chan waitResult, 1)
	go func() { answer <- c.waitFor(t, readFileWait(w.path("job"), nil)) }()
	var ids []string
	eventually(t, "the running wait found by its attributes", func() bool {
		ids = found(t, tc, `DurawaitTool = "wait_for" AND DurawaitState = "running" AND DurawaitCaller = "anonymous" AND DurawaitProbeTool = "demo.read_file"`)
		return len(ids) == 1
	})
	var rows []struct{ ID, State string }
	eventually(t, "durawait waits --temporal to list it", func() bool {
		out, errOut, ok := w.waits(append([]string{"list", "--temporal", e.Addr(), "--running", "--tool", "wait_for", "--json"}, engineFlags(e.Addr())...)...)
		require.True(t, ok, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
		return len(rows) == 1
	})
	assert.Equal(t, ids[0], rows[0].ID)
	assert.Equal(t, "running", rows[0].State)

	w.write("job", "READY")
	assert.Equal(t, "matched", (<-answer).Reason)
	eventually(t, "its end state", func() bool {
		return len(found(t, tc, fmt.Sprintf(`WorkflowId = %q AND DurawaitState = "matched"`, ids[0]))) == 1
	})
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
	// durawait's own workflows (the catalog, the host's lease) have a tool
	// and no state: IS NULL (documented for waits of the previous release)
	// works on the embedded engine.
	eventually(t, "the catalog and the host lease to be found by IS NULL", func() bool {
		return len(found(t, tc, `DurawaitTool = "internal" AND DurawaitState IS NULL`)) == 2
	})
}
