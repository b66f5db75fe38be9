package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/enginecreds"
	"github.com/durawait/durawait/internal/temporalconn"
	"github.com/durawait/durawait/internal/waits"
)

// waitsAbout closes the help of `durawait waits`.
const waitsAbout = `Every subcommand finds the engine of the data dir (--data-dir, or the config's
data_dir) through its lock file, in the namespace that durawait serves
(unless --namespace says another), or talks to --temporal HOST:PORT (--namespace).`

// waitID is the positional argument of show and cancel.
var waitID = positional{name: "ID", missing: "the wait's ID is required (see durawait waits list)"}

// waitsTimeout bounds one waits command.
const waitsTimeout = 30 * time.Second

// waitsFlags are the flags of every waits subcommand: where the engine is,
// and the output's format.
type waitsFlags struct {
	fs            *flag.FlagSet
	file, dataDir *string
	conn          *temporalFlags
	asJSON        *bool
}

// registerWaitsFlags adds the flags of every waits subcommand to fs, and
// --json to those that print JSON (withJSON).
func registerWaitsFlags(fs *flag.FlagSet, withJSON bool) *waitsFlags {
	w := &waitsFlags{
		fs:      fs,
		file:    fs.String("config", "", "TOML config file (its data_dir, temporal and namespace)"),
		dataDir: fs.String("data-dir", config.Default().DataDir, "data dir whose running durawait's engine to use"),
		conn:    registerTemporalFlags(fs),
		asJSON:  new(bool),
	}
	if withJSON {
		fs.BoolVar(w.asJSON, "json", false, "print JSON for scripts instead of a table")
	}
	return w
}

// waitsList is the setup of `durawait waits list`: the operator's view of
// the waits.
func waitsList(fs *flag.FlagSet) action {
	flags := registerWaitsFlags(fs, true)
	var opts waits.ListOptions
	fs.BoolVar(&opts.Running, "running", false, "only the waits that run now")
	fs.StringVar(&opts.Tool, "tool", "", "only one tool's waits (wait_for, wait_for_text, start_agent, ...)")
	fs.StringVar(&opts.Caller, "caller", "", "only one caller's waits (its principal)")
	fs.StringVar(&opts.State, "state", "", "only the waits in one state ("+strings.Join(waits.States(), ", ")+")")
	since := fs.String("since", "", "only the waits started since then: a duration back from now (90m, 24h) or an RFC 3339 time")
	fs.IntVar(&opts.Limit, "limit", waits.DefaultLimit, "at most this many waits")
	return func(ctx context.Context, inv invocation) error {
		if opts.Limit < 1 {
			return usageErrorf("--limit: must be at least 1, got %d", opts.Limit)
		}
		if opts.State != "" && !slices.Contains(waits.States(), opts.State) {
			return usageErrorf("--state: %q is not a wait's state (%s)", opts.State, strings.Join(waits.States(), ", "))
		}
		if *since != "" {
			t, err := parseSince(*since, time.Now())
			if err != nil {
				return usageErrorf("--since: %v", err)
			}
			opts.Since = t
		}
		ctx, cancel := context.WithTimeout(ctx, waitsTimeout)
		defer cancel()
		tc, namespace, err := flags.connect(ctx, inv.stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		ws, notes, err := waits.List(ctx, tc, namespace, opts)
		for _, n := range notes {
			fmt.Fprintln(inv.stderr, "note:", n)
		}
		if err != nil {
			return err
		}
		if *flags.asJSON {
			if ws == nil {
				ws = []waits.Wait{}
			}
			return waits.WriteJSON(inv.stdout, ws)
		}
		return waits.WriteTable(inv.stdout, ws, time.Now())
	}
}

// parseSince reads --since: a duration back from now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q: a duration back from now must be positive", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (90m, 24h) nor an RFC 3339 time (2026-12-06T09:00:00Z)", s)
	}
	return t, nil
}

// waitsShow is the setup of `durawait waits show ID`.
func waitsShow(fs *flag.FlagSet) action {
	flags := registerWaitsFlags(fs, true)
	return func(ctx context.Context, inv invocation) error {
		ctx, cancel := context.WithTimeout(ctx, waitsTimeout)
		defer cancel()
		tc, _, err := flags.connect(ctx, inv.stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		d, err := waits.Show(ctx, tc, inv.positional[0])
		if err != nil {
			return err
		}
		if *flags.asJSON {
			return waits.WriteJSON(inv.stdout, d)
		}
		return waits.WriteDetail(inv.stdout, d)
	}
}

// waitsCancel is the setup of `durawait waits cancel ID`.
func waitsCancel(fs *flag.FlagSet) action {
	flags := registerWaitsFlags(fs, false)
	reason := fs.String("reason", "", "why it is cancelled: recorded in the wait's history, and shown by durawait waits show")
	return func(ctx context.Context, inv invocation) error {
		ctx, cancel := context.WithTimeout(ctx, waitsTimeout)
		defer cancel()
		tc, namespace, err := flags.connect(ctx, inv.stderr)
		if err != nil {
			return err
		}
		defer tc.Close()
		id := inv.positional[0]
		if err := waits.Cancel(ctx, tc, namespace, id, *reason); err != nil {
			return err
		}
		fmt.Fprintf(inv.stdout, "cancel requested for wait %s (as %s)\n", id, waits.OperatorIdentity())
		return nil
	}
}

// connect dials the engine the flags name (waitsEngine) as the operator,
// within ctx, and returns the client and the namespace of the waits; SDK
// warnings go to stderr.
func (w *waitsFlags) connect(ctx context.Context, stderr io.Writer) (client.Client, string, error) {
	cfg := config.Default()
	if *w.file != "" {
		var err error
		if cfg, err = config.Load(*w.file); err != nil {
			return nil, "", err
		}
	}
	w.fs.Visit(func(f *flag.Flag) {
		if f.Name == "data-dir" {
			cfg.DataDir = *w.dataDir
		}
	})
	if err := cfg.ResolveTemporal(w.conn.layer(), nil, configName(*w.file)); err != nil {
		return nil, "", fmt.Errorf("configuration: %w", err)
	}
	addr, ownerNamespace, err := waitsEngine(cfg)
	if err != nil {
		return nil, "", err
	}
	if ownerNamespace != "" && cfg.Connection.Sources["namespace"] != temporalconn.FlagsName {
		// The serve that owns the data dir runs its waits in its own
		// namespace: only --namespace asks for another.
		cfg.Namespace = ownerNamespace
	}
	dial, err := cfg.Connection.ClientOptions()
	if err != nil {
		return nil, "", err
	}
	dial.HostPort, dial.Namespace, dial.Identity = addr, cfg.Namespace, waits.OperatorIdentity()
	if cfg.Temporal == "" {
		// The data dir's engine lets in only its certificate.
		if dial.ConnectionOptions.TLS, err = enginecreds.FilesIn(cfg.DataDir).ClientTLS(); err != nil {
			return nil, "", fmt.Errorf("--data-dir %s: %w", cfg.DataDir, err)
		}
	}
	dial.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	tc, err := client.DialContext(ctx, dial)
	if err != nil {
		return nil, "", fmt.Errorf("connect to Temporal at %s: %w", addr, err)
	}
	return tc, cfg.Namespace, nil
}

// waitsEngine is the Temporal address to use: --temporal, or the engine of
// the durawait that owns the data dir, with the namespace that durawait
// runs its waits in ("" when --temporal is given, or the owner's lock
// file predates the record).
func waitsEngine(cfg config.Config) (addr, namespace string, err error) {
	if cfg.Temporal != "" {
		return cfg.Temporal, "", nil
	}
	if cfg.DataDir == "" {
		return "", "", errors.New("--data-dir: no data dir (set --data-dir, or --temporal HOST:PORT)")
	}
	dir, owner, held, err := inspectDataDir(cfg.DataDir)
	if err != nil {
		return "", "", fmt.Errorf("--data-dir: %w", err)
	}
	if !held {
		return "", "", fmt.Errorf("no durawait runs on data dir %s: start durawait serve there, or pass --temporal HOST:PORT", dir)
	}
	if owner.Engine == "" {
		return "", "", fmt.Errorf("the durawait on data dir %s (pid %d) has no engine address yet (still starting?); try again", dir, owner.PID)
	}
	return owner.Engine, owner.Namespace, nil
}
