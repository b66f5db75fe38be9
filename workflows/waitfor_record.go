package workflows

import (
	"time"
)

// ProbeRecord is what a wait_for's probe loop records while it runs (as
// its activity's heartbeat details: one engine action each time, never on
// a timer), for a loop resumed after a restart or a move
// (ResumeProgress): the last observation, and for a quiet_for_sec wait
// the quiet window it has run for.
//
// The observation is recorded when it differs from the recorded one, but
// not more often than once a third of the wait's bound, and never after
// the bound (ProbeRecorder): an output that changes at every sample costs
// at most three records, whatever the wait lasts or its poll_sec. So a
// resumed loop answers with the output its host saw last, or one up to a
// third of the bound older when the output kept changing, until it
// samples again.
//
// The quiet window is written once it has run for half of quiet_for_sec,
// and cleared the moment a sample differs, before the loop goes on. So a
// record a loop resumes from never spans a change that any recorded
// sample saw, and a resumed wait settles when it would have without the
// break, or later (the samples since the last record are lost with the
// host, as if the poll had been slower), never earlier.
type ProbeRecord struct {
	// Observed says Observation is an output the probe returned.
	Observed    bool   `json:"observed,omitempty"`
	Observation string `json:"observation,omitempty"`
	// QuietSince, when set, is when Observation was first seen, unchanged
	// in every sample since (quiet_for_sec waits).
	QuietSince time.Time `json:"quiet_since,omitzero"`
}

// ProbeRecorder decides when a probe loop writes its ProbeRecord.
type ProbeRecorder struct {
	// QuietFor is the wait's quiet_for_sec window; zero for other waits.
	QuietFor time.Duration
	// Gap is the least time between two records of a changed
	// observation (a third of the bound: NewProbeRecorder).
	Gap time.Duration
	// Deadline is the wait's bound: no observation is recorded at or
	// after it (the loop answers then).
	Deadline time.Time

	current ProbeRecord
	// observedAt is when the loop last recorded an observation; zero in a
	// loop that has not.
	observedAt time.Time
}

// NewProbeRecorder is the recorder of a loop on schedule s of spec, which
// starts from the record current (zero: none).
func NewProbeRecorder(spec WaitForSpec, s PollSchedule, current ProbeRecord) *ProbeRecorder {
	r := &ProbeRecorder{Gap: spec.MaxWait() / 3, Deadline: s.Deadline, current: current}
	if spec.Until.Kind == ConditionQuietForSec {
		r.QuietFor = spec.QuietFor()
	}
	return r
}

// Next is the record the loop keeps after the sample that p ends with,
// taken at now; write says it changed and must be recorded before the
// loop goes on (then Written).
func (r *ProbeRecorder) Next(p PollProgress, now time.Time) (next ProbeRecord, write bool) {
	if !p.HasObservation {
		return r.current, false
	}
	next = ProbeRecord{Observed: true, Observation: p.LastObservation}
	switch {
	case !r.current.QuietSince.IsZero() && !p.QuietSince.Equal(r.current.QuietSince):
		// The output changed since the recorded window: clear it, whatever
		// it costs, so no resumed loop settles early.
		return next, true
	case !r.current.QuietSince.IsZero():
		return r.current, false
	case r.QuietFor > 0 && now.Sub(p.QuietSince) >= r.QuietFor/2:
		next.QuietSince = p.QuietSince
		return next, true
	}
	changed := !r.current.Observed || r.current.Observation != p.LastObservation
	if changed && now.Before(r.Deadline) && (r.observedAt.IsZero() || now.Sub(r.observedAt) >= r.Gap) {
		return next, true
	}
	return r.current, false
}

// Written notes that next was recorded for the sample taken at now.
func (r *ProbeRecorder) Written(next ProbeRecord, now time.Time) {
	r.current = next
	r.observedAt = now
}
