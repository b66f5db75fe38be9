package hosting

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/workflows"
)

// An end on disk reads back as the JSON the loop gave, or as an
// ApplicationError of the same message and type; an end that cannot be
// (another error, one with details) stays in memory only.
func TestEndFilesKeepResultsAndFailures(t *testing.T) {
	f, err := newEndFiles(filepath.Join(t.TempDir(), EndsFolder))
	require.NoError(t, err)
	result := workflows.WaitForResult{Reason: workflows.WaitReasonTimeout, LastObservation: "pending 7", Samples: 3}
	require.NoError(t, f.put(ref1.key(), result, nil))
	end, ok := f.get(ref1.key())
	require.True(t, ok)
	want, err := json.Marshal(result)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(end.result.(json.RawMessage)))
	assert.NoError(t, end.err)

	other := loopKey{"wait_for/2", "r2"}
	_, ok = f.get(other)
	assert.False(t, ok, "another run's end is not this one's")
	require.NoError(t, f.put(other, nil, temporal.NewNonRetryableApplicationError("the probe failed", workflows.ErrTypeLoopFailed, nil)))
	end, ok = f.get(other)
	require.True(t, ok)
	assert.Nil(t, end.result)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, end.err, &appErr)
	assert.Equal(t, "the probe failed", appErr.Message())
	assert.Equal(t, workflows.ErrTypeLoopFailed, appErr.Type())
	assert.True(t, appErr.NonRetryable())

	assert.ErrorIs(t, f.put(other, nil, errors.New("plain")), errNotKept)
	assert.ErrorIs(t, f.put(other, nil, temporal.NewApplicationError("with details", "T", "a detail")), errNotKept)

	f.remove(ref1.key())
	_, ok = f.get(ref1.key())
	assert.False(t, ok)

	// An old end whose run still runs stays (a bound can be hours); once
	// its run no longer runs it goes, and so do a kill's leftover
	// temporary files. A young end stays whatever the list says.
	old := time.Now().Add(-endFileTTL - time.Minute)
	require.NoError(t, os.Chtimes(f.files.path(other), old, old))
	require.NoError(t, os.WriteFile(filepath.Join(f.files.dir, "x.json.tmp"), nil, 0o600))
	require.NoError(t, os.Chtimes(filepath.Join(f.files.dir, "x.json.tmp"), old, old))
	young := loopKey{"wait_for/3", "r3"}
	require.NoError(t, f.put(young, result, nil))
	f.prune(time.Now(), func(k loopKey) bool { return k == other })
	_, ok = f.get(other)
	assert.True(t, ok, "its run still runs")
	_, err = os.Stat(filepath.Join(f.files.dir, "x.json.tmp"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	f.prune(time.Now(), func(loopKey) bool { return false })
	_, ok = f.get(other)
	assert.False(t, ok, "its run closed")
	_, ok = f.get(young)
	assert.True(t, ok, "too young to prune")
}

// A loop's end told to a caller by a worker that then died before
// Temporal recorded it is what the host's next start answers: a resumed
// loop of that run does not run again (it would have answered otherwise),
// and the wait's LoopAnswer finds it.
func TestAnEndToldBeforeAKillIsWhatTheNextStartAnswers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), EndsFolder)
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(c completer) *loops {
		t.Helper()
		f, err := newEndFiles(dir)
		require.NoError(t, err)
		return newLoops("default", c, nil, f, nil, discard)
	}

	// The first start tells its caller, and cannot reach Temporal.
	down := newFakeCompleter()
	for range 1000 {
		down.fail = append(down.fail, serviceerror.NewUnavailable("the engine was killed too"))
	}
	told := make(chan struct{})
	first := open(down)
	first.observer = observerFunc(func(string, workflows.WaitEvent) { close(told) })
	toldResult := workflows.WaitForResult{Reason: workflows.WaitReasonTimeout, LastObservation: "pending 1", Samples: 1}
	first.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) { return toldResult, nil })
	<-told
	first.drop("", errStopping) // the kill: its answer is abandoned
	assert.Empty(t, down.all())

	// The next start: the wait asks for its loop's end.
	c := newFakeCompleter()
	next := open(c)
	end, ok := next.collect(context.Background(), ref1.key())
	require.True(t, ok, "the end on disk is collected")
	want, err := json.Marshal(toldResult)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(end.result.(json.RawMessage)))

	// A resumed loop of the run answers with it, not with its own end.
	ran := false
	require.True(t, next.start(context.Background(), ref1, loopStart{}, func(context.Context) (any, error) {
		ran = true
		return workflows.WaitForResult{Reason: workflows.WaitReasonTimeout, Samples: 0, ProbeError: "downstream unavailable"}, nil
	}))
	got := awaitAnswers(t, c, 1)
	next.wg.Wait()
	assert.False(t, ran, "the loop did not run again")
	assert.JSONEq(t, string(want), string(got[0].result.(json.RawMessage)))

	// Recorded: the file is gone.
	_, ok = next.files.get(ref1.key())
	assert.False(t, ok)
}
