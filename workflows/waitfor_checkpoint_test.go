package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A heartbeat is bounded whatever the observation: counts, the quiet
// window's start, a hash and an excerpt, not 256 KiB.
func TestACheckpointIsSmallWhateverTheObservation(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var p PollProgress
	p.RecordAttempt(t0)
	p.RecordObservation(strings.Repeat("pod/web-1 Running é\n", MaxObservationBytes/21), t0)
	p.RecordUnavailable(errString(strings.Repeat("x", 10_000)))
	b, err := json.Marshal(p.Checkpoint())
	require.NoError(t, err)
	assert.Less(t, len(b), MaxCheckpointExcerptBytes+2*1024, "the heartbeat's size")
	assert.Greater(t, len(p.LastObservation), 200*1024)
}

// A loop resumed from a checkpoint judges the quiet window against the
// whole last observation (by its hash), and reports the excerpt, marked,
// only while it has not sampled again.
func TestAResumedLoopKeepsItsQuietWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	big := strings.Repeat("line\n", 2*MaxCheckpointExcerptBytes)
	var p PollProgress
	p.RecordAttempt(t0)
	p.RecordObservation(big, t0)
	p.RecordAttempt(t0.Add(2 * time.Second))
	p.RecordObservation(big, t0.Add(2*time.Second))

	var decoded PollCheckpoint
	b, err := json.Marshal(p.Checkpoint())
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &decoded))
	resumed := decoded.Progress()
	assert.Equal(t, 2, resumed.Samples)
	assert.Equal(t, 2, resumed.Attempts)
	assert.True(t, resumed.QuietSince.Equal(t0))
	assert.True(t, strings.HasPrefix(resumed.LastObservation, big[:MaxCheckpointExcerptBytes-len("…")]+"…"))
	assert.Contains(t, resumed.LastObservation, "[durawait: the first 4096 of 40960 bytes, as the last heartbeat kept them]")

	// Heartbeats before the next sample carry the same checkpoint, however
	// often it resumes.
	again := resumed.Checkpoint()
	assert.Equal(t, decoded, again)
	assert.Equal(t, resumed, again.Progress())

	same := resumed
	same.RecordObservation(big, t0.Add(4*time.Second))
	assert.True(t, same.QuietSince.Equal(t0), "the same output: still quiet since the first sample")
	assert.Equal(t, big, same.LastObservation)
	same.RecordObservation(big, t0.Add(6*time.Second))
	assert.True(t, same.QuietSince.Equal(t0), "compared in full once sampled again")

	changed := resumed
	changed.RecordObservation(big+"more\n", t0.Add(4*time.Second))
	assert.True(t, changed.QuietSince.Equal(t0.Add(4*time.Second)), "a changed output restarts the window")

	// A small observation is carried whole, unmarked.
	var small PollProgress
	small.RecordObservation("Running", t0)
	assert.Equal(t, "Running", small.Checkpoint().Progress().LastObservation)
}

// A loop started by the previous release heartbeated its whole
// PollProgress: a worker of this release resumes it, and the workflow
// finishes from it.
func TestThePreviousReleasesHeartbeatStillResumes(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old := PollProgress{Samples: 3, HasObservation: true, LastObservation: "phase: Pending", QuietSince: t0, Attempts: 4, LastAttemptAt: t0.Add(6 * time.Second)}
	b, err := json.Marshal(old)
	require.NoError(t, err)
	var c PollCheckpoint
	require.NoError(t, json.Unmarshal(b, &c))
	p := c.Progress()
	assert.Equal(t, old, p)
	p.RecordObservation("phase: Pending", t0.Add(8*time.Second))
	assert.True(t, p.QuietSince.Equal(t0))

	// And the other way: a worker of the previous release resuming this
	// release's checkpoint reads the excerpt as its last observation.
	var small PollProgress
	small.RecordObservation("phase: Pending", t0)
	b, err = json.Marshal(small.Checkpoint())
	require.NoError(t, err)
	var previous PollProgress
	require.NoError(t, json.Unmarshal(b, &previous))
	assert.Equal(t, "phase: Pending", previous.LastObservation)
	assert.True(t, previous.HasObservation)
}

type errString string

func (e errString) Error() string { return string(e) }

// A call in flight is in the checkpoint, so a loop resumed after its
// worker was lost knows its last attempt never answered.
func TestACheckpointCarriesTheOpenAttempt(t *testing.T) {
	var p PollProgress
	p.RecordAttempt(t0)
	assert.True(t, p.Checkpoint().Progress().AttemptOpen)
	p.RecordObservation("phase: Pending", t0)
	assert.False(t, p.Checkpoint().Progress().AttemptOpen)
}
