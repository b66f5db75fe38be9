//go:build !noengine

package main

// The embedded Temporal engine of `durawait serve`: in every build but one
// made with -tags noengine (a front or worker image for a cluster, which
// never runs an engine: docs/deploy.md, "A build without the engine").

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/engine"
	"github.com/durawait/durawait/internal/heapfloor"
	"github.com/durawait/durawait/workflows"
)

// hasEmbeddedEngine says this build can run the embedded engine.
const hasEmbeddedEngine = true

// startEngine starts the embedded Temporal engine (serve without
// --temporal), after taking the data dir's lock, and fills p.target. It
// records the MCP URL of listenHTTP, if any, in the lock file, and keeps
// the process's heap goal at or above heapfloor's floor (not when GOGC is
// set).
func (p *process) startEngine(context.Context) (func(), error) {
	if !p.roles.engine {
		return nil, nil
	}
	owner := datadir.Owner{PID: os.Getpid(), HTTP: p.mcpURL(), Namespace: p.cfg.Namespace, StartedAt: time.Now().UTC(),
		Config: p.cfg.File, Args: os.Args[1:], Settings: p.cfg.Settings(os.Getenv)}
	if p.roles.daemon {
		owner.Log = datadir.LogPath(p.cfg.DataDir)
	}
	lock, err := datadir.Acquire(p.cfg.DataDir, owner)
	if err != nil {
		return nil, err
	}
	uiPort, err := p.uiPort()
	if err != nil {
		lock.Release()
		return nil, err
	}
	spans := p.engineSpans()
	eng, err := engine.Start(engine.Options{
		DataDir:   p.cfg.DataDir,
		Port:      p.cfg.EnginePort,
		UIPort:    uiPort,
		Namespace: p.cfg.Namespace,
		// A new namespace is created with them; prepareNamespace adds
		// them to one an earlier release created.
		SearchAttributes: workflows.SearchAttributes(),
		Retention:        p.cfg.Retention(),
		// The SDK's workflow cache is the process's: the engine's own
		// workers create it (see startWorker).
		WorkflowCacheSize: workflowCacheSize,
		Logger:            p.logger,
		LogLevel:          max(p.level, slog.LevelWarn),
		SpanExporter:      spans,
		// Its billable actions, on /metrics (durawait.engine.actions).
		MeterProvider: p.engineMeters(),
	})
	if err != nil {
		// An engine that did not start does not shut its exporter down.
		shutdownExporter(spans, p.logger)
		lock.Release()
		return nil, explainEngineStart(err)
	}
	// The engine is most of the process's allocation: its heap goal is
	// kept at or above a floor unless the user set GOGC.
	floorCtx, stopFloor := context.WithCancel(context.Background())
	if heapfloor.Enabled(os.Getenv) {
		p.logger.Debug("keeping the heap goal at or above a floor; set GOGC to choose the collector's pacing yourself",
			"floor_mib", heapfloor.DefaultFloor>>20)
		go heapfloor.Keep(floorCtx, heapfloor.Options{Base: defaultGCPercent})
	} else {
		p.logger.Debug("GOGC is set: the collector paces as it says, with no heap floor", "gogc", os.Getenv("GOGC"))
	}
	stop := func() { stopFloor(); eng.Stop(); lock.Release() }
	owner.Engine = eng.Addr()
	owner.UI = eng.UILoginURL()
	if err := lock.Update(owner); err != nil {
		stop()
		return nil, err
	}
	p.target = temporalTarget{addr: eng.Addr(), creds: eng.Credentials()}
	// The UI's link holds its login token (good until the next start):
	// `durawait status` prints it too.
	p.logger.Info("embedded Temporal engine started", "addr", p.target.addr, "ui", orDisabled(eng.UILoginURL()), "data_dir", p.cfg.DataDir)
	return stop, nil
}

// uiPort is the port the embedded Web UI listens on: ui_port, or a free
// one when it is 0; 0 (the engine's "no UI") when ui is false.
func (p *process) uiPort() (int, error) {
	switch {
	case !p.cfg.UI:
		return 0, nil
	case p.cfg.UIPort != 0:
		return p.cfg.UIPort, nil
	}
	port, err := freePort()
	if err != nil {
		return 0, fmt.Errorf("find a free port for the Web UI (ui_port = 0): %w", err)
	}
	return port, nil
}

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
		fix = "--ui-port PORT (0: any free port), or --no-ui"
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

// backupDatabase writes a consistent copy of the data dir's engine
// database to to (engine.BackupDatabase).
func backupDatabase(dataDir, to string) error { return engine.BackupDatabase(dataDir, to) }
