package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

func execCommand(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

func itoa(i int) string { return strconv.Itoa(i) }

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// temporalClient connects to a durawait's engine, as an operator's tools would.
func temporalClient(t testing.TB, engine string) client.Client {
	t.Helper()
	tc, err := client.Dial(client.Options{HostPort: engine, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return tc
}

// historyLengths returns the number of history events of every completed
// wait_for workflow on the engine, oldest first.
func historyLengths(t testing.TB, engine string) []int {
	t.Helper()
	tc := temporalClient(t, engine)
	ctx := context.Background()
	resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowType = 'WaitFor' AND ExecutionStatus = 'Completed'",
	})
	require.NoError(t, err)
	execs := resp.Executions
	sort.Slice(execs, func(i, j int) bool { return execs[i].StartTime.AsTime().Before(execs[j].StartTime.AsTime()) })
	var lengths []int
	for _, e := range execs {
		it := tc.GetWorkflowHistory(ctx, e.Execution.WorkflowId, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		n := 0
		for it.HasNext() {
			_, err := it.Next()
			require.NoError(t, err)
			n++
		}
		lengths = append(lengths, n)
	}
	return lengths
}

// inputSchema is a listed tool's input schema as JSON, however the client
// library stored it.
func inputSchema(t testing.TB, tool mcp.Tool) []byte {
	return schemaJSON(t, tool.RawInputSchema, tool.InputSchema)
}

// outputSchema is a listed tool's output schema as JSON.
func outputSchema(t testing.TB, tool mcp.Tool) []byte {
	return schemaJSON(t, tool.RawOutputSchema, tool.OutputSchema)
}

func schemaJSON(t testing.TB, raw []byte, parsed any) []byte {
	t.Helper()
	if len(raw) > 0 {
		return raw
	}
	b, err := json.Marshal(parsed)
	require.NoError(t, err)
	return b
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
