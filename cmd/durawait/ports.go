package main

import (
	"fmt"

	"github.com/durawait/durawait/internal/engine"
)

// explainEngineStart turns the engine's port-in-use error into one line
// naming the port and the flag that changes it, and, when a Temporal server
// answers there (the Temporal CLI's dev server uses 7233 and 8233), the
// --temporal flag that would use it. Other errors pass unchanged.
func explainEngineStart(err error) error {
	e, ok := engine.AsPortInUse(err)
	if !ok {
		return err
	}
	fix := "--engine-port PORT (0: any free port)"
	if e.Service == engine.ServiceUI {
		fix = "--ui-port PORT (0: no Web UI)"
	}
	msg := fmt.Sprintf("%s; run with %s", e.Error(), fix)
	switch {
	case e.Temporal != "" && e.TemporalTLS:
		// Another durawait's engine (or a cluster with TLS): it takes
		// its own credentials.
		msg += fmt.Sprintf(", or use that Temporal server (it answers over TLS: another durawait's engine takes its data dir's credentials, "+
			`eval "$(durawait temporal-env --data-dir DIR)"; a cluster its own --tls-* flags) instead of an embedded engine: --temporal %s`, e.Temporal)
	case e.Temporal != "":
		msg += fmt.Sprintf(", or use that Temporal server instead of an embedded engine: --temporal %s", e.Temporal)
	}
	return fmt.Errorf("%s", msg)
}
