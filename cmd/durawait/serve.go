package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"path/filepath"

	"github.com/durawait/durawait/internal/stdiobridge"
)

// runServe is `durawait serve`. Over stdio with the embedded engine, it is a
// bridge to the data dir's background daemon, started on first use, so that
// every stdio session of the user shares one engine; --no-daemon runs
// everything in this process instead, and --temporal serves stdio on that
// cluster.
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var noDaemon, daemon bool
	cfg, err := loadConfig("serve", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&noDaemon, "no-daemon", false, "with --stdio: run the engine, worker and front end in this process instead of sharing the background daemon (it then owns the data dir)")
		fs.BoolVar(&daemon, "daemon", false, "run as the background daemon of stdio sessions (started by serve --stdio; not for direct use)")
	})
	if err != nil {
		return err
	}
	all := roles{engine: true, worker: true, front: true}
	switch {
	case daemon:
		all.daemon = true
		return runRoles(ctx, "serve", all, cfg, stdin, stdout, stderr)
	case cfg.Stdio && cfg.Temporal == "" && !noDaemon:
		logger := newLogger(cfg, stderr)
		dir, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return err
		}
		d := &daemonStarter{dataDir: dir, args: args, logger: logger}
		// The daemon's MCP endpoint is on loopback; when it authenticates
		// callers, this user proves to be local with the token it wrote
		// to the (private) data dir.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		return stdiobridge.Run(ctx, stdin, stdout, stdiobridge.Options{
			Connect: d.connect,
			Client:  &http.Client{Transport: &localTokenTransport{dataDir: dir, next: tr}},
			Logger:  logger.With("component", "bridge"),
		})
	default:
		return runRoles(ctx, "serve", all, cfg, stdin, stdout, stderr)
	}
}
