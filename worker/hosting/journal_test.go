package hosting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// journaled is the journal entry of ref1's probe loop.
func journaled(t *testing.T) journalEntry {
	t.Helper()
	input, err := json.Marshal(workflows.PollInput{})
	require.NoError(t, err)
	return journalEntry{WorkflowID: ref1.WorkflowID, RunID: ref1.RunID, ActivityID: ref1.ActivityID,
		Activity: workflows.PollProbeActivityName, Input: input}
}

// journaledLoops are loops with a journal and loop ends in dir.
func journaledLoops(t *testing.T, dir string, c completer, o observerFunc) *loops {
	t.Helper()
	j, err := newLoopJournal(filepath.Join(dir, JournalFolder))
	require.NoError(t, err)
	f, err := newEndFiles(filepath.Join(dir, EndsFolder))
	require.NoError(t, err)
	var observer activities.Observer
	if o != nil {
		observer = o
	}
	return newLoops("default", c, observer, f, j, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// keys are the runs a journal holds.
func keys(t *testing.T, j *loopJournal) []loopKey {
	t.Helper()
	entries, err := j.entries()
	require.NoError(t, err)
	var out []loopKey
	for _, e := range entries {
		out = append(out, e.key())
	}
	return out
}

// A loop of the own host is in the journal while it runs, with what it
// recorded and signalled since; its entry goes once its end is answered,
// and stays when the loop is dropped (the host's next start resumes it).
func TestTheJournalHoldsARunningLoopUntilItsEndIsAnswered(t *testing.T) {
	c := newFakeCompleter()
	l := journaledLoops(t, t.TempDir(), c, nil)
	entry := journaled(t)
	release := make(chan struct{})
	require.True(t, l.start(context.Background(), ref1, loopStart{journal: &entry}, func(context.Context) (any, error) {
		<-release
		return workflows.WaitForResult{Reason: workflows.WaitReasonMatched}, nil
	}))
	require.NoError(t, l.journal.record(ref1.key(), workflows.ProbeRecord{Observed: true, Observation: "pending 2"}))
	require.NoError(t, l.journal.signalled(ref1.key(), "needs_approval"))
	require.NoError(t, l.journal.signalled(ref1.key(), "needs_approval"))
	entries, err := l.journal.entries()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, ref1.ActivityID, entries[0].ActivityID)
	assert.Equal(t, &workflows.ProbeRecord{Observed: true, Observation: "pending 2"}, entries[0].Record)
	assert.Equal(t, []string{"needs_approval"}, entries[0].Signalled, "a blocker is journaled once")

	close(release)
	awaitAnswers(t, c, 1)
	l.wg.Wait()
	assert.Empty(t, keys(t, l.journal), "answered: out of the journal")

	other := ref1
	other.RunID = "r2"
	entry.RunID = "r2"
	l.start(context.Background(), other, loopStart{journal: &entry}, func(ctx context.Context) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	l.drop("", errStopping)
	assert.Equal(t, []loopKey{other.key()}, keys(t, l.journal), "dropped: still journaled")
	assert.NoError(t, l.journal.record(loopKey{"wait_for/9", "r9"}, workflows.ProbeRecord{}), "a run not journaled is not written")
	assert.Len(t, keys(t, l.journal), 1)
}

// A loop resumed from the journal neither tells nor answers its end until
// Temporal confirms its activity open: another holder may have answered it
// while this host was down. Confirmed, it does both; not confirmed, it is
// dropped with neither, and out of the journal.
func TestALoopResumedFromTheJournalTellsItsEndOnlyOnceConfirmed(t *testing.T) {
	c := newFakeCompleter()
	told := make(chan string, 2)
	l := journaledLoops(t, t.TempDir(), c, func(id string, _ workflows.WaitEvent) { told <- id })
	entry := journaled(t)
	ended := make(chan struct{}, 2)
	end := func(context.Context) (any, error) {
		defer func() { ended <- struct{}{} }()
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout}, nil
	}
	require.True(t, l.start(context.Background(), ref1, loopStart{journal: &entry, unconfirmed: true}, end))
	<-ended
	assert.Never(t, func() bool { return len(c.all()) > 0 || len(told) > 0 }, 200*time.Millisecond, 10*time.Millisecond,
		"neither answered nor told before it is confirmed")
	l.confirm(ref1.key(), true)
	awaitAnswers(t, c, 1)
	assert.Equal(t, ref1.WorkflowID, <-told)
	l.wg.Wait()

	require.True(t, l.start(context.Background(), ref1, loopStart{journal: &entry, unconfirmed: true}, end))
	<-ended
	l.confirm(ref1.key(), false)
	l.wg.Wait()
	assert.Len(t, c.all(), 1, "no second answer")
	assert.Empty(t, told, "nothing told")
	assert.Empty(t, keys(t, l.journal))
	assert.False(t, l.knows(ref1.key()))
}

// toldThenKilled runs ref1's journaled loop in dir to its end, told to
// its caller, with Temporal unreachable, then kills it (drops the loop):
// the journal entry and the end stay on disk.
func toldThenKilled(t *testing.T, dir string, told any) {
	t.Helper()
	down := newFakeCompleter()
	for range 1000 {
		down.fail = append(down.fail, serviceerror.NewUnavailable("the engine was killed too"))
	}
	tell := make(chan struct{}, 1)
	first := journaledLoops(t, dir, down, func(string, workflows.WaitEvent) { tell <- struct{}{} })
	entry := journaled(t)
	first.start(context.Background(), ref1, loopStart{journal: &entry}, func(context.Context) (any, error) { return told, nil })
	<-tell
	first.drop("", errStopping) // the kill: its answer is abandoned
}

// A worker killed after its loop's end was told, before Temporal recorded
// it, leaves the loop in its journal and its end on disk: the next start
// resumes the loop from the journal, and it answers with that end, not a
// second one.
func TestAKillAfterAnEndWasToldLeavesTheJournalAndTheEnd(t *testing.T) {
	dir := t.TempDir()
	toldResult := workflows.WaitForResult{Reason: workflows.WaitReasonMatched, LastObservation: "READY", Samples: 4}
	toldThenKilled(t, dir, toldResult)

	c := newFakeCompleter()
	next := journaledLoops(t, dir, c, func(string, workflows.WaitEvent) {})
	entries, err := next.journal.entries()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	ran := false
	next.start(context.Background(), ref1, loopStart{journal: &entries[0], unconfirmed: true}, func(context.Context) (any, error) {
		ran = true
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout}, nil
	})
	next.confirm(ref1.key(), true)
	got := awaitAnswers(t, c, 1)
	next.wg.Wait()
	assert.False(t, ran, "the loop did not run again")
	want, err := json.Marshal(toldResult)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got[0].result.(json.RawMessage)))
	assert.Empty(t, keys(t, next.journal))
	_, ok := next.files.get(ref1.key())
	assert.False(t, ok, "recorded: the end is gone too")
}

// The sweep prunes an entry only when it is old and its run is neither
// listed as running nor running here; a young one stays whatever the list
// says, and so does an old one whose run runs on.
func TestTheJournalIsPrunedOfOldEntriesOnly(t *testing.T) {
	j, err := newLoopJournal(filepath.Join(t.TempDir(), JournalFolder))
	require.NoError(t, err)
	old, young, runs := journaled(t), journaled(t), journaled(t)
	old.RunID, young.RunID, runs.RunID = "old", "young", "runs"
	for _, e := range []journalEntry{old, young, runs} {
		require.NoError(t, j.put(e))
	}
	long := time.Now().Add(-journalTTL - time.Minute)
	require.NoError(t, os.Chtimes(j.files.path(old.key()), long, long))
	require.NoError(t, os.Chtimes(j.files.path(runs.key()), long, long))
	require.NoError(t, os.WriteFile(filepath.Join(j.files.dir, "x.json"), []byte("not json"), 0o600))
	require.NoError(t, os.Chtimes(filepath.Join(j.files.dir, "x.json"), long, long))
	j.prune(time.Now(), func(k loopKey) bool { return k == runs.key() })
	assert.ElementsMatch(t, []loopKey{young.key(), runs.key()}, keys(t, j))
	_, err = os.Stat(filepath.Join(j.files.dir, "x.json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "unreadable and old")
}

// A wait whose loop's activity Temporal timed out while its host was down
// asks for the loop's end (LoopAnswer) while a loop resumed from the
// journal holds it back unconfirmed: once Temporal says the activity is no
// longer open, the end the killed worker had told is collected from disk,
// not "no answer".
func TestAnUnconfirmedLoopsToldEndIsCollectedFromDisk(t *testing.T) {
	dir := t.TempDir()
	toldResult := workflows.WaitForResult{Reason: workflows.WaitReasonTimeout, LastObservation: "pending 3", Samples: 3}
	toldThenKilled(t, dir, toldResult)
	entry := journaled(t)

	next := journaledLoops(t, dir, newFakeCompleter(), func(string, workflows.WaitEvent) { t.Error("an unconfirmed loop told its end") })
	require.True(t, next.start(context.Background(), ref1, loopStart{journal: &entry, unconfirmed: true}, func(context.Context) (any, error) {
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout}, nil
	}))
	collected := make(chan unrecordedEnd, 1)
	go func() {
		end, ok := next.collect(context.Background(), ref1.key())
		assert.True(t, ok, "the told end is on disk")
		collected <- end
	}()
	next.confirm(ref1.key(), false) // the activity timed out
	end := <-collected
	want, err := json.Marshal(toldResult)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(end.result.(json.RawMessage)))
	next.wg.Wait()
}

// Temporal's word on a loop resumed from the journal is for that loop
// only: a loop of the run that runs confirmed (its activity's delivery)
// is not dropped by it.
func TestAConfirmReachesOnlyTheLoopResumedUnconfirmed(t *testing.T) {
	c := newFakeCompleter()
	l := journaledLoops(t, t.TempDir(), c, nil)
	entry := journaled(t)
	release := make(chan struct{})
	require.True(t, l.start(context.Background(), ref1, loopStart{journal: &entry}, func(context.Context) (any, error) {
		<-release
		return workflows.WaitForResult{Reason: workflows.WaitReasonMatched}, nil
	}))
	l.confirm(ref1.key(), false)
	assert.True(t, l.has(ref1.key()), "still running")
	assert.Len(t, keys(t, l.journal), 1, "still journaled")
	close(release)
	awaitAnswers(t, c, 1)
	l.wg.Wait()
}

// A loop resumed from the journal that has its end asks for its
// confirmation at once (the host's confirmation of all its journaled
// loops may still be under way), and answers as soon as it comes.
func TestAnUnconfirmedLoopWithItsEndAsksToBeConfirmedAtOnce(t *testing.T) {
	c := newFakeCompleter()
	l := journaledLoops(t, t.TempDir(), c, nil)
	asked := make(chan loopRef, 1)
	l.confirmNow = func(ref loopRef) {
		asked <- ref
		go l.confirm(ref.key(), true)
	}
	entry := journaled(t)
	require.True(t, l.start(context.Background(), ref1, loopStart{journal: &entry, unconfirmed: true}, func(context.Context) (any, error) {
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout}, nil
	}))
	select {
	case ref := <-asked:
		assert.Equal(t, ref1, ref)
	case <-time.After(10 * time.Second):
		t.Fatal("the loop with its end did not ask to be confirmed")
	}
	awaitAnswers(t, c, 1)
	l.wg.Wait()
}

// An agent run's answers are journaled with its entry, once each, so a run
// resumed from the journal goes on from its last turn; an answer for a run
// with no entry journals nothing.
func TestTheJournalKeepsAnAgentRunsAnswers(t *testing.T) {
	j, err := newLoopJournal(filepath.Join(t.TempDir(), JournalFolder))
	require.NoError(t, err)
	e := journaled(t)
	e.Activity = workflows.RunAgentActivityName
	require.NoError(t, j.put(e))
	turn := workflows.AgentTurn{InvocationID: e.WorkflowID, RunID: e.RunID, Turn: 1, SessionID: "s1", Answer: "yes"}
	require.NoError(t, j.answered(e.key(), turn))
	require.NoError(t, j.answered(e.key(), turn))
	require.NoError(t, j.signalled(e.key(), workflows.BlockerKey(1, workflows.BlockerPermission)))
	require.NoError(t, j.answered(loopKey{"agent/other", "r"}, turn))
	entries, err := j.entries()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, []workflows.AgentTurn{turn}, entries[0].Turns)
	assert.Equal(t, []string{"permission_denied@1"}, entries[0].Signalled)
}
