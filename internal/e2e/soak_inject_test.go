package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// soakFault is a bug built into a copy of durawait to prove that the
// soak's judge catches it: in file (relative to the repository root), the
// snippet, which must occur exactly once, becomes replacement. The tree is
// not copied: `go build -overlay` swaps the file for the changed one.
type soakFault struct {
	name        string
	file        string
	snippet     string
	replacement string
	// caught is what the judge must find: a failure of this rule for a
	// wait of this kind.
	caught soakCaught
}

// soakCaught is a failure the judge must report for a fault.
type soakCaught struct {
	rule string
	kind soakKind
}

// soakInjectedFaults are the bugs TestSoakJudgeFailsAnInjectedFault builds
// into durawait. Each must make the small soak (seed 42) fail.
//
// "A probe loop resumed after a crash never samples again" (a reviewer
// proved with it that the old judge counted wrong answers as right). What
// the fault means, whatever the code that resumes loops looks like: where
// a wait_for probe loop continues a wait that an earlier attempt began on
// a worker that died (before the per-host leases: PollProbe retried by
// Temporal after its heartbeat timeout; now: Poller.Run given a Resumed
// record, which a host does when it resumes the loops of its waits after a
// restart, or adopts the waits of a host whose lease lapsed), the resumed
// loop takes no sample any more: it sleeps until the wait's deadline and
// then answers timeout. A loop that was never interrupted is unchanged. Under the soak's kills, flipped wait_for
// waits then answer timeout with their pre-flip observation while
// durawait was up, which the judge must count as wrong answers. When that
// code moves, retarget the snippet to the new resume path; the helper
// fails loudly until then, so the proof is never skipped silently.
//
// "A pane watch says every match was in its baseline": a wait_for_text
// whose text is printed after its watch read the pane's baseline answers
// matched with source "baseline" instead of "output" (the contract's
// field that tells a caller whether the text was already there). Matched
// and Text stay right, so only the judge's baseline rule can catch it:
// the time the text was typed, against the time the answering watch read
// its baseline (durawait's log).
//
// "A post tells no wait_for_event waiting on it": the event's latch keeps
// the post but drops the waits it passes without telling them (nor the
// front end that took the post). Those waits answer timeout though the
// hook took their post while durawait was up, which the judge's event
// rule must count as wrong (and not excuse as a post after the bound or
// a durawait down).
var soakInjectedFaults = []soakFault{{
	name:    "a probe loop resumed after a crash never samples again",
	file:    "activities/pollprobe.go",
	snippet: "\t\tloop.progress = workflows.ResumeProgress(schedule, resumed, clock.Now())\n\t}\n",
	replacement: `		loop.progress = workflows.ResumeProgress(schedule, resumed, clock.Now())
		// INJECTED FAULT (internal/e2e/soak_inject_test.go): a resumed loop never samples again.
		if err := clock.SleepUntil(ctx, schedule.Deadline); err != nil {
			return workflows.WaitForResult{}, err
		}
		return loop.result(workflows.WaitReasonTimeout, ""), nil
	}
`,
	caught: soakCaught{ruleWrongAnswer, kindMatch},
}, {
	name:        "a pane watch says every match was in its baseline",
	file:        "activities/watchpane.go",
	snippet:     `NewTextResult(spec, true, "output",`,
	replacement: `NewTextResult(spec, true, /* INJECTED FAULT (internal/e2e/soak_inject_test.go) */ "baseline",`,
	caught:      soakCaught{ruleWrongAnswer, kindText},
}, {
	name: "a post tells no wait_for_event waiting on it",
	file: "workflows/event_latch.go",
	snippet: `		l.tell(s.WaitID, p)
		if s.Wake {
			answer.Woken++
			kept = append(kept, s)
		} else {
			answer.Answered = append(answer.Answered, AnsweredWait{WaitID: s.WaitID, Started: s.Started})
		}
`,
	replacement: `		// INJECTED FAULT (internal/e2e/soak_inject_test.go): a post drops the waits it passes untold.
		if s.Wake {
			l.tell(s.WaitID, p)
			answer.Woken++
			kept = append(kept, s)
		}
`,
	caught: soakCaught{ruleWrongAnswer, kindEvent},
}}

// TestSoakJudgeFailsAnInjectedFault proves the soak's judge the way a
// reviewer did: durawait built with soakInjectedFaults (all of them, in
// one binary: the faults touch different kinds of wait) runs the small
// soak of make test (seed 42), and the judge must find each fault's
// failures. (The same soak passes on durawait as it is: TestSoakCrashes.)
func TestSoakJudgeFailsAnInjectedFault(t *testing.T) {
	durawait := buildWithFaults(t, soakInjectedFaults...)
	knobs := defaultSoakKnobs()
	knobs.seed = 42
	knobs.tmuxCrashes = 0 // the injected fault is the loops'; every text wait is judged on its text
	v := runSoak(t, knobs, durawait)
	t.Log(v.report)
	for _, f := range v.failures {
		t.Logf("the judge found (as it should): %s", f)
	}
	for _, f := range soakInjectedFaults {
		assert.True(t, v.failed(f.caught.rule, f.caught.kind),
			"the judge passed a durawait built with %q: no %q failure of a %v wait (see the report above)", f.name, f.caught.rule, f.caught.kind)
	}
}

// TestSoakFaultNeedsItsSnippetOnce: a fault whose snippet is missing, or
// found more than once, is refused, never skipped.
func TestSoakFaultNeedsItsSnippetOnce(t *testing.T) {
	f := soakFault{name: "x", file: "f.go", snippet: "b()\n", replacement: "c()\n"}
	got, err := f.apply("a()\nb()\n")
	require.NoError(t, err)
	require.Equal(t, "a()\nc()\n", got)
	_, err = f.apply("a()\n")
	require.ErrorContains(t, err, "0 times")
	_, err = f.apply("b()\nb()\n")
	require.ErrorContains(t, err, "2 times")
}

// apply returns src with the fault injected, or why it cannot be.
func (f soakFault) apply(src string) (string, error) {
	if n := strings.Count(src, f.snippet); n != 1 {
		return "", fmt.Errorf("fault %q: its snippet is in %s %d times, want exactly once; retarget it (soakInjectedFaults) to the code as it is now. The snippet:\n%s",
			f.name, f.file, n, f.snippet)
	}
	return strings.Replace(src, f.snippet, f.replacement, 1), nil
}

// buildWithFaults builds durawait with the faults injected (go build
// -overlay) and returns the binary's path.
func buildWithFaults(t *testing.T, faults ...soakFault) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := t.TempDir()
	changed := map[string]string{} // file -> its text with the faults so far
	for _, f := range faults {
		path := filepath.Join(root, f.file)
		src, ok := changed[path]
		if !ok {
			b, err := os.ReadFile(path)
			require.NoError(t, err, "fault %q", f.name)
			src = string(b)
		}
		src, err = f.apply(src)
		require.NoError(t, err)
		changed[path] = src
	}
	overlay := map[string]map[string]string{"Replace": {}}
	i := 0
	for path, src := range changed {
		i++
		swapped := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(path)))
		require.NoError(t, os.WriteFile(swapped, []byte(src), 0o644))
		overlay["Replace"][path] = swapped
	}
	b, err := json.Marshal(overlay)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "overlay.json"), b, 0o644))
	out := filepath.Join(dir, "durawait-with-faults")
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", out, "./cmd/durawait")
	cmd.Dir = root
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "build durawait with the faults injected:\n%s", msg)
	return out
}

// TestSoakJudgeTracesAReplayedEndToItsWatch: the short soak's one failure
// on 41972ea was the judge's. A run whose closing attempt a host answered
// with an end it had told before a restart (its end file) was judged as
// if that attempt had watched the pane; the watch that found the text was
// the earlier one, and the judge must trace the answer to it.
func TestSoakJudgeTracesAReplayedEndToItsWatch(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, "2026-12-05T"+s+"Z")
		require.NoError(t, err)
		return v
	}
	const id = "wait_for_text/ca6c7e2e12004e5faa10b8f9"
	log := `time=2026-12-05T23:56:23.706Z level=DEBUG msg="a pane watch read its baseline" component=host workflow=` + id + ` pane=%0 bytes=32238
time=2026-12-05T23:56:37.855Z level=INFO msg="a loop's end was told before a restart and not recorded: answering with it" component=host host=vm-f73a60e2 workflow=` + id + "\n"
	j := &judge{baselines: logTimes(soakBaselineRead, log), replays: logTimes(soakEndReplayed, log)}
	replayed := &soakRun{id: id, start: at("23:56:16.056"), attemptStart: at("23:56:37.338"), closed: at("23:56:43.865")}
	from, exact := j.answeringWatch(replayed)
	assert.Equal(t, replayed.start, from, "a replayed end's watch began after the run's start, not with the replaying attempt")
	assert.False(t, exact)
	assert.Equal(t, at("23:56:23.706"), j.lastBaseline(id, replayed.closed), "the answering watch's baseline")

	watched := &soakRun{id: id, start: at("23:56:16.056"), attemptStart: at("23:56:16.456"), closed: at("23:56:30.000")}
	from, exact = j.answeringWatch(watched)
	assert.Equal(t, watched.attemptStart, from, "an attempt that watched began its watch")
	assert.True(t, exact)
}

// The full soak's one failure on c7728a1 was the judge's too. After a
// restart, the host resumed a wait's pane watch from its journal (it read
// its baseline at 18:19:44.404); the engine handed the loop's attempt to
// the restarted worker only at 44.905, and the resumed watch, which saw
// the text printed at 44.902 in its output, answered it. The judge took
// the attempt's start for the answering watch's, and wanted the text in
// its baseline. A watch already running when the attempt began, with no
// restart between, may be the answering one.
func TestSoakJudgeTracesAnAttemptToAJournalResumedWatch(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, "2026-12-06T"+s+"Z")
		require.NoError(t, err)
		return v
	}
	const id = "wait_for_text/6debf149eec87881f14a7b6a"
	log := `time=2026-12-06T18:19:44.404Z level=DEBUG msg="a pane watch read its baseline" component=host workflow=` + id + ` pane=%0 bytes=38425
time=2026-12-06T18:19:44.979Z level=DEBUG msg="a pane watch read its baseline" component=host workflow=` + id + ` pane=%0 bytes=38548
`
	s := &soak{downs: []soakDown{{from: at("18:19:42.834"), to: at("18:19:43.489"), what: "kill 311"}}}
	j := &judge{s: s, baselines: logTimes(soakBaselineRead, log), replays: logTimes(soakEndReplayed, log)}
	r := &soakRun{id: id, start: at("18:19:41.111"), attemptStart: at("18:19:44.905"), closed: at("18:19:55.378")}
	from, exact := j.answeringWatch(r)
	assert.Equal(t, r.start, from, "the resumed watch began before the attempt")
	assert.False(t, exact)

	// A watch of the process before a restart is not one that runs on.
	s.downs = append(s.downs, soakDown{from: at("18:19:44.500"), to: at("18:19:44.800"), what: "kill 312"})
	from, exact = j.answeringWatch(r)
	assert.Equal(t, r.attemptStart, from, "the earlier watch died with its process")
	assert.True(t, exact)
}
