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
	// LastObservation is the last observation's first
	// MaxCheckpointExcerptBytes (cut on a rune boundary, ending in "…");
	// ObservationBytes is its whole length. The previous release carried
	// the whole observation here and no hash: a worker of that release
	// resuming this checkpoint reads the excerpt, and this one reads that
	// release's whole observation.
	LastObservation  string `json:"last_observation"`
	ObservationBytes int    `json:"observation_bytes,omitempty"`
	// ObservationSHA256 is the hex SHA-256 of the whole last observation;
	// empty in the previous release's heartbeats.
	ObservationSHA256 string    `json:"observation_sha256,omitempty"`
	QuietSince        time.Time `json:"quiet_since"`
	Attempts          int       `json:"attempts"`
	LastAttemptAt     time.Time `json:"last_attempt_at"`
	LastError         string    `json:"last_error,omitempty"`
	// AttemptOpen: see PollProgress (absent from earlier releases'
	// heartbeats: false).
	AttemptOpen bool `json:"attempt_open,omitempty"`
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
		AttemptOpen: p.AttemptOpen,
	}
	switch {
	case p.resumed != nil:
		// Not sampled since the resume: the checkpoint it resumed from.
		c.LastObservation, c.ObservationBytes, c.ObservationSHA256 = p.resumed.excerpt, p.resumed.bytes, p.resumed.hash
	case p.HasObservation:
		c.LastObservation = TruncateUTF8(p.LastObservation, MaxCheckpointExcerptBytes)
		c.ObservationBytes = len(p.LastObservation)
		c.ObservationSHA256 = observationHash(p.LastObservation)
	}
	return c
}

// Progress is the progress a resumed loop continues from. Until it samples
// again, its LastObservation is the excerpt, marked when it was cut (what a
// wait that ends before then reports), and the whole observation's hash
// stands for it, so the next sample is compared with the whole of it.
func (c PollCheckpoint) Progress() PollProgress {
	p := PollProgress{
		Samples: c.Samples, HasObservation: c.HasObservation, LastObservation: c.LastObservation, QuietSince: c.QuietSince,
		Attempts: c.Attempts, LastAttemptAt: c.LastAttemptAt, LastError: c.LastError, AttemptOpen: c.AttemptOpen,
	}
	if c.ObservationSHA256 == "" || !c.HasObservation {
		return p // the previous release's heartbeat: the whole observation
	}
	p.resumed = &resumedObservation{excerpt: c.LastObservation, bytes: c.ObservationBytes, hash: c.ObservationSHA256}
	if c.ObservationBytes > len(c.LastObservation) {
		p.LastObservation += fmt.Sprintf("\n[durawait: the first %d of %d bytes, as the last heartbeat kept them]",
			len(c.LastObservation), c.ObservationBytes)
	}
	return p
}

// resumedObservation is the last observation of a loop resumed from a
// checkpoint, until it samples again.
type resumedObservation struct {
	excerpt string
	bytes   int
	hash    string
}
