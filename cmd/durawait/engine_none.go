//go:build noengine

package main

import (
	"context"
	"errors"
)

// hasEmbeddedEngine says this build can run the embedded engine: a build
// with -tags noengine cannot (it links no Temporal server).
const hasEmbeddedEngine = false

// errNoEngine is the start of a role that needs the embedded engine in a
// build without it.
var errNoEngine = errors.New("this durawait was built without the embedded Temporal engine (-tags noengine): " +
	"run durawait front or durawait worker with --temporal HOST:PORT (a Temporal cluster), or use the full build for durawait serve")

// startEngine refuses: this build has no embedded engine.
func (p *process) startEngine(context.Context) (func(), error) {
	if !p.roles.engine {
		return nil, nil
	}
	return nil, errNoEngine
}

// explainEngineStart passes err unchanged: no engine starts here.
func explainEngineStart(err error) error { return err }

// backupDatabase refuses: this build cannot read the engine's database.
func backupDatabase(string, string) error { return errNoEngine }
