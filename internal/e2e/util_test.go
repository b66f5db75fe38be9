package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

func itoa(i int) string { return strconv.Itoa(i) }

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// temporalClient connects to a durawait's engine, as an operator's tools would.
func temporalClient(t testing.TB, engine string) client.Client {
	t.Helper()
	tc, err := client.Dial(client.Options{HostPort: engine, Namespace: "default",
		ConnectionOptions: client.ConnectionOptions{TLS: engineTLS(t, engine)}})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return tc
}

// historyLengths returns the number of history events of the completed
// wait_for workflows on the engine, oldest first, once there are want of them
// (visibility, and the closing of a run whose answer came in process, lag a
// little behind the result).
func historyLengths(t testing.TB, engine string, want int) []int {
	t.Helper()
	tc := temporalClient(t, engine)
	ctx := context.Background()
	var execs []*workflowpb.WorkflowExecutionInfo
	eventually(t, "the completed waits to be listed", func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = 'WaitFor' AND ExecutionStatus = 'Completed'",
		})
		if err != nil {
			return false
		}
		execs = resp.Executions
		return len(execs) >= want
	})
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

// logLine is the first line of log that contains msg.
func logLine(log, msg string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, msg) {
			return line
		}
	}
	return ""
}

// parentPID is pid's parent process.
func parentPID(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	require.GreaterOrEqual(t, len(fields), 2)
	return atoi(fields[1])
}
