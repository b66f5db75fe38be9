package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/mcpfront"
)

// One principal's burst does not hold back another principal's call: the
// front end keeps 64 workflow starts in flight and queues the rest, giving
// turns principal by principal (mcpfront/turns.go). alice sends 400
// wait_for calls at once over eight sessions, each on its own file, each
// matching at its first sample; once 64 of hers have started (the rest of
// her burst is queued behind the starts in flight), bob calls. The front end's log
// records the order the starts returned: with turns, bob's comes after
// the 64 and the starts in flight then and about one turn more (about 140
// here); first come, first served puts it after all 400 of hers.
func TestOnePrincipalsBurstDoesNotHoldBackAnother(t *testing.T) {
	const burst = 400
	w := newWorkspace(t)
	inst := w.startServe(w.withTokens(w.writeConfig(w.demoServer("demo"))))
	require.NoError(t, os.MkdirAll(w.path("alice"), 0o755))
	for i := range burst {
		w.write("alice/w-"+itoa(i), "READY")
	}
	w.write("bob", "READY")
	sessions := make([]*mcpClient, 8)
	for i := range sessions {
		sessions[i] = inst.clientAs(t, aliceToken)
	}
	bob := inst.clientAs(t, bobToken)

	var wg sync.WaitGroup
	// Every call has ended before the test does, also when it fails early
	// (they assert on t).
	defer wg.Wait()
	for i := range burst {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			res, err := sessions[i%len(sessions)].call(ctx, "wait_for", readFileWait(w.path("alice/w-"+itoa(i)), nil), "")
			var r waitResult
			if assert.NoError(t, err, "alice's call %d", i) && assert.NoError(t, json.Unmarshal([]byte(resultText(res)), &r), resultText(res)) {
				assert.Equal(t, "matched", r.Reason, "alice's call %d: %s", i, resultText(res))
			}
		})
	}
	// Once a window's worth of alice's waits has started, the rest of her
	// calls (sent at once, a second or more ago) are queued at the front.
	// Nothing shows that they all are: calls still on their way would
	// only make first come, first served look better (bob's start would
	// pass them), never make turns fail this test.
	eventually(t, "a window of alice's waits to start", func() bool {
		n, _ := startedBefore(inst.log.String(), "alice", "bob")
		return n >= mcpfront.DefaultStartConcurrency
	})
	assert.Equal(t, "matched", bob.waitFor(t, readFileWait(w.path("bob"), nil)).Reason)
	wg.Wait()

	// The front end logs each wait as its start returns: alice's started
	// before bob's.
	started, bobStarted := startedBefore(inst.log.String(), "alice", "bob")
	require.True(t, bobStarted, "bob's wait has no start line")
	// And what bob saw: alice's waits that took their first sample before
	// his (the demo probe's call log; logged only: the worker's task
	// slots reorder first samples).
	seen := map[string]bool{}
	sampled := -1
	for _, line := range strings.Split(readFile(w.path("calls.log")), "\n") {
		path := probedPath(line)
		if path == w.path("bob") {
			sampled = len(seen)
			break
		}
		if strings.HasPrefix(path, w.path("alice")+"/") {
			seen[path] = true
		}
	}
	require.GreaterOrEqual(t, sampled, 0, "bob's wait never sampled")
	t.Logf("bob's wait started after %d of alice's %d, and took its first sample after %d of hers", started, burst, sampled)
	assert.Less(t, started, burst*3/4, "bob's call waited behind alice's queued burst")
}

// startedBefore counts the "wait started" lines of principal who in a
// front end's log before the first of principal until's, and says whether
// there is one of until's.
func startedBefore(log, who, until string) (n int, found bool) {
	for _, line := range strings.Split(log, "\n") {
		switch {
		case !strings.Contains(line, `msg="wait started`): // or "wait started or attached", after a retried start
		case strings.Contains(line, "caller.principal="+until+" "):
			return n, true
		case strings.Contains(line, "caller.principal="+who+" "):
			n++
		}
	}
	return n, false
}

// probedPath is the path of a read_file line of the demo probe's call log.
func probedPath(line string) string {
	tool, args, ok := strings.Cut(line, " ")
	if !ok || tool != "read_file" {
		return ""
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(args), &a) != nil {
		return ""
	}
	return a.Path
}
