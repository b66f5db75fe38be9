package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/workflows"
)

// The worker checks a probe against the probe policy itself: a read-only
// tool passes, a destructive or unannotated one only when the server's
// probe_tools allows it, a server the worker does not know or a tool its
// server does not list never; while the server has listed nothing (down,
// not yet connected) the check says "unavailable", which skips the call.
func TestCheckProbeAppliesThePolicyOnTheWorker(t *testing.T) {
	readOnly := mcp.NewTool("read_file", mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false))
	destructive := mcp.NewTool("delete_file", mcp.WithDestructiveHintAnnotation(true))
	servers := fakeServers{tools: []mcp.Tool{readOnly, destructive}}
	for _, tc := range []struct {
		name, probe string
		policy      map[string][]string
		refusal     string
	}{
		{"read-only", "demo.read_file", nil, ""},
		{"destructive", "demo.delete_file", nil, "demo.delete_file is annotated destructiveHint: true"},
		{"destructive, allowed by probe_tools", "demo.delete_file", map[string][]string{"demo": {"delete_file"}}, ""},
		{"another server's allowance", "demo.delete_file", map[string][]string{"other": {"*"}}, "demo.delete_file is annotated destructiveHint: true"},
		{"unknown server", "elsewhere.read_file", nil, `no downstream MCP server is named "elsewhere" on this worker`},
		{"not a canonical name", "read_file", nil, "is not of the form <server>.<tool>"},
		{"a tool the server does not list", "demo.new_tool", nil, `downstream MCP server "demo" lists no tool named "new_tool"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Downstream{Servers: servers, ProbeTools: tc.policy}).CheckProbe(tc.probe)
			if tc.refusal == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.refusal)
		})
	}
}

// A server that has listed no tools yet is unavailable to the check: the
// loop skips the call, and checks again at the next sample.
func TestCheckProbeWaitsForTheServersList(t *testing.T) {
	err := (&Downstream{Servers: fakeServers{}}).CheckProbe("demo.delete_file")
	var unavailable *UnavailableError
	require.ErrorAs(t, err, &unavailable)
	assert.Equal(t, "demo", unavailable.Server)
}

// A probe loop checks its probe before each call: one refused after its
// start (the server listed the tool since, destructive) ends
// ProbeNotAllowed without that call, and while the server has listed
// nothing no call is made.
func TestAProbeLoopChecksBeforeEachCall(t *testing.T) {
	prober := &countingProber{}
	checks := 0
	clock := newFakeClock(time.Unix(1_700_000_000, 0))
	p := &Poller{
		Prober: prober,
		Clock:  clock,
		Allowed: func(probe string) error {
			checks++
			switch checks {
			case 1:
				return &UnavailableError{Server: "demo", Err: errors.New("not listed yet")}
			case 2:
				return nil
			default:
				return errors.New(probe + " is annotated destructiveHint: true")
			}
		},
	}
	spec := workflows.WaitForSpec{Probe: workflows.Probe{Tool: "demo.delete_file"},
		Until: workflows.Until{Kind: workflows.ConditionMatches, Pattern: "never"}, PollSec: 1, MaxWaitSec: 60}
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), ProbeRun{Input: workflows.PollInput{Spec: spec, StartedAt: clock.Now()}})
		done <- err
	}()
	var err error
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, workflows.ErrTypeProbeNotAllowed, app.Type())
	assert.Equal(t, 1, prober.count(), "only the allowed sample called the probe")
}

// A re-exposed call of a server configured expose = false on the worker
// is refused there, before the server is asked anything.
func TestCallRefusesAServerNotExposedOnTheWorker(t *testing.T) {
	called := false
	d := &Downstream{Servers: fakeServers{hidden: true, call: func(context.Context, any, func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		called = true
		return mcp.NewToolResultText("done"), nil
	}}}
	_, err := d.Call(context.Background(), workflows.DownstreamCall{Server: "demo", Tool: "delete_file"}, nil)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "an application error: %v", err)
	assert.Equal(t, workflows.ErrTypeNotExposed, app.Type())
	assert.True(t, app.NonRetryable())
	assert.False(t, called, "the server was not called")
}

// A probe loop whose probe the worker refuses ends ProbeNotAllowed before
// its first sample.
func TestAProbeLoopTheWorkerRefusesCallsNothing(t *testing.T) {
	prober := &countingProber{}
	p := &Poller{
		Prober:  prober,
		Allowed: func(probe string) error { return errors.New(probe + " is not read-only") },
	}
	spec := workflows.WaitForSpec{Probe: workflows.Probe{Tool: "demo.delete_file"},
		Until: workflows.Until{Kind: workflows.ConditionMatches, Pattern: "x"}, PollSec: 1, MaxWaitSec: 10}
	_, err := p.Run(context.Background(), ProbeRun{Input: workflows.PollInput{Spec: spec, StartedAt: time.Now()}})
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "an application error: %v", err)
	assert.Equal(t, workflows.ErrTypeProbeNotAllowed, app.Type())
	assert.Contains(t, app.Error(), "the worker refuses this probe: demo.delete_file is not read-only")
	assert.Zero(t, prober.count())
}
