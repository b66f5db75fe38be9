package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// MaxCheckpointExcerptBytes bounds the excerpt of the last observation that
// a probe loop's heartbeat carries.
const MaxCheckpointExcerptBytes = 4 * 1024

// maxCheckpointErrorBytes bounds the last unavailability error it carries.
const maxCheckpointErrorBytes = 1024

// PollCheckpoint is what a wait_for probe loop's heartbeat carries: small
// and bounded whatever the observation (every heartbeat is a write to the
// engine's store), yet enough to resume the same wait after a crash or on
// another worker — the counts, the quiet window's start, and the last
// observation as a hash (a resumed quiet_for_sec wait still knows whether
// the next sample changed) and an excerpt (what a wait that ends before the
// resumed loop samples again reports).
type PollCheckpoint struct {
	Samples        int  `json:"samples"`
	HasObservation bool `json:"has_observation"`
	// ObservationSHA256 is the hex SHA-256 of the last observation.
	ObservationSHA256 string `json:"observation_sha256,omitempty"`
	// ObservationExcerpt is the last observation's first
	// MaxCheckpointExcerptBytes (cut on a rune boundary); ObservationBytes
	// is its whole length.
	ObservationExcerpt string    `json:"observation_excerpt,omitempty"`
	ObservationBytes   int       `json:"observation_bytes,omitempty"`
	QuietSince         time.Time `json:"quiet_since"`
	Attempts           int       `json:"attempts"`
	LastAttemptAt      time.Time `json:"last_attempt_at"`
	LastError          string    `json:"last_error,omitempty"`
	// LastObservation is where the previous release's heartbeats carried
	// the whole observation: read from a loop it started, never written.
	LastObservation string `json:"last_observation,omitempty"`
}

// observationHash is the hex SHA-256 of an observation.
func observationHash(observation string) string {
	sum := sha256.Sum256([]byte(observation))
	return hex.EncodeToString(sum[:])
}

// Checkpoint is the bounded heartbeat form of the progress.
func (p PollProgress) Checkpoint() PollCheckpoint {
	c := PollCheckpoint{
		Samples: p.Samples, HasObservation: p.HasObservation, QuietSince: p.QuietSince,
		Attempts: p.Attempts, LastAttemptAt: p.LastAttemptAt, LastError: TruncateUTF8(p.LastError, maxCheckpointErrorBytes),
	}
	if p.HasObservation {
		c.ObservationSHA256 = p.observationHash()
		c.ObservationExcerpt = TruncateUTF8(p.LastObservation, MaxCheckpointExcerptBytes)
		c.ObservationBytes = len(p.LastObservation)
	}
	return c
}

// Progress is the progress a resumed loop continues from. Its
// LastObservation is the excerpt, marked when it was cut; the hash keeps the
// whole observation's identity, so the next sample is compared with the
// whole of it.
func (c PollCheckpoint) Progress() PollProgress {
	p := PollProgress{
		Samples: c.Samples, HasObservation: c.HasObservation, QuietSince: c.QuietSince,
		Attempts: c.Attempts, LastAttemptAt: c.LastAttemptAt, LastError: c.LastError,
	}
	switch {
	case c.LastObservation != "" || (c.HasObservation && c.ObservationSHA256 == ""):
		// The previous release's heartbeat: the whole observation.
		p.LastObservation = c.LastObservation
	case c.HasObservation:
		p.LastObservation = c.ObservationExcerpt
		if c.ObservationBytes > len(c.ObservationExcerpt) {
			p.LastObservation += fmt.Sprintf("\n[durawait: cut to %d of %d bytes: the worker sampling it was lost and no sample was taken since]",
				len(c.ObservationExcerpt), c.ObservationBytes)
		}
		p.lastObservationHash = c.ObservationSHA256
	}
	return p
}
