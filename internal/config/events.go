package config

import (
	"fmt"
	"path"
	"time"

	"github.com/durawait/durawait/workflows"
)

// Events configures the events: wait_for_event, post_event and POST
// /hooks/{name} (docs/events.md).
type Events struct {
	// RetentionSec is how long a post is kept for the waits that come
	// after it (default 86400: a day).
	RetentionSec int `toml:"retention_sec"`
	// Shared are the patterns (path.Match: *, ?, [...]) of the event
	// names every principal shares; every other event is its poster's
	// own.
	Shared []string `toml:"shared"`
	// HooksFile holds the hooks' secrets ([[hook]] name, scheme, secret,
	// principal): a secret does not belong in a config file.
	HooksFile string `toml:"hooks_file"`
}

// MaxEventRetentionSec bounds events.retention_sec: 30 days.
const MaxEventRetentionSec = 30 * 24 * 3600

// Retention is how long a post is kept.
func (e Events) Retention() time.Duration { return time.Duration(e.RetentionSec) * time.Second }

func (e Events) validate() []error {
	var errs []error
	if e.RetentionSec < 1 || e.RetentionSec > MaxEventRetentionSec {
		errs = append(errs, fmt.Errorf("events.retention_sec: must be between 1 and %d (30 days), got %d", MaxEventRetentionSec, e.RetentionSec))
	}
	for i, p := range e.Shared {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("events.shared[%d]: %q is not a name pattern (path.Match: *, ?, [...])", i, p))
		}
	}
	return errs
}

// defaultEvents are the events' defaults.
func defaultEvents() Events {
	return Events{RetentionSec: int(workflows.DefaultEventRetention / time.Second)}
}
