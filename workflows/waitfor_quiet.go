package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// QuietRecord is the one thing a quiet_for_sec wait's probe loop records
// while it runs (as its activity's heartbeat details: one engine action
// each time it changes, never on a timer): that the output has hashed to
// Hash, unchanged, since Since. A loop resumed after a restart or a move
// (ResumeProgress) keeps that window when its first sample still hashes to
// Hash, and starts a new one otherwise.
//
// A record is written once the window has run for half of quiet_for_sec
// (NextQuietRecord), and cleared the moment a sample differs, before the
// loop goes on. So a record a loop resumes from never spans a change that
// any recorded sample saw, and a resumed wait settles when it would have
// without the break, or later (the samples since the last record are lost
// with the host, as if the poll had been slower), never earlier. An output
// that changes faster than half the window writes nothing; one that
// settles writes one record.
type QuietRecord struct {
	Since time.Time `json:"since,omitzero"`
	// Hash is ObservationHash of the output; empty: no window recorded.
	Hash string `json:"hash,omitempty"`
}

// ObservationHash is the hex SHA-256 of an observation.
func ObservationHash(observation string) string {
	sum := sha256.Sum256([]byte(observation))
	return hex.EncodeToString(sum[:])
}

// NextQuietRecord is the record a quiet_for_sec loop keeps after the
// sample that p ends with, taken at now, given the record it keeps now;
// write says it changed and must be recorded before the loop goes on.
func NextQuietRecord(current QuietRecord, p PollProgress, quietFor time.Duration, now time.Time) (next QuietRecord, write bool) {
	if !p.HasObservation {
		return current, false
	}
	if current.Hash != "" {
		if p.QuietSince.Equal(current.Since) {
			return current, false
		}
		// The output changed since the record: clear it.
		return QuietRecord{}, true
	}
	if quietFor > 0 && now.Sub(p.QuietSince) >= quietFor/2 {
		return QuietRecord{Since: p.QuietSince, Hash: ObservationHash(p.LastObservation)}, true
	}
	return current, false
}
