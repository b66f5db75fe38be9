package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/stdiobridge"
)

// serveCommand is the setup of `durawait serve`: the configuration's
// flags and serve's own.
func serveCommand(fs *flag.FlagSet) action {
	flags := registerConfigFlags(fs)
	var opts serveOptions
	fs.BoolVar(&opts.noDaemon, "no-daemon", false, "with --stdio: run the engine, worker and front end in this process instead of sharing the background daemon (it then owns the data dir)")
	fs.BoolVar(&opts.daemon, "daemon", false, "run as the background daemon of stdio sessions (started by serve --stdio; not for direct use)")
	return func(ctx context.Context, inv invocation) error {
		cfg, err := flags.load()
		if err != nil {
			return err
		}
		return runServe(ctx, cfg, opts, inv)
	}
}

// serveOptions are serve's own flags.
type serveOptions struct {
	// noDaemon runs everything in this process over stdio; daemon runs
	// as the background daemon of stdio sessions.
	noDaemon, daemon bool
}

// runServe is `durawait serve`. Over stdio with the embedded engine, it is a
// bridge to the data dir's background daemon, started on first use, so that
// every stdio session of the user shares one engine; --no-daemon runs
// everything in this process instead, and --temporal serves stdio on that
// cluster. The daemon is started with serve's arguments as given.
func runServe(ctx context.Context, cfg config.Config, opts serveOptions, inv invocation) error {
	stdin, stdout, stderr := inv.stdin, inv.stdout, inv.stderr
	all := roles{engine: true, worker: true, front: true}
	switch {
	case opts.daemon:
		all.daemon = true
		return runRoles(ctx, "serve", all, cfg, stdin, stdout, stderr)
	case cfg.Stdio && cfg.Temporal == "" && !opts.noDaemon:
		logger := newLogger(cfg, stderr)
		dir, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return fmt.Errorf("data dir %s: %w", cfg.DataDir, err)
		}
		d := &daemonStarter{dataDir: dir, args: inv.args, settings: cfg.Settings(os.Getenv), logger: logger}
		// The daemon's MCP endpoint is on loopback; when it authenticates
		// callers, this user proves to be local with the token it wrote
		// to the (private) data dir.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		return stdiobridge.Run(ctx, stdin, stdout, stdiobridge.Options{
			Connect: d.connect,
			Client:  &http.Client{Transport: &localTokenTransport{dataDir: dir, next: tr}},
			Logger:  logger.With("component", "bridge"),
			Stderr:  stderr,
		})
	default:
		return runRoles(ctx, "serve", all, cfg, stdin, stdout, stderr)
	}
}
