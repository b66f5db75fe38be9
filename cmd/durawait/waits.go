package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/enginecreds"
	"github.com/durawait/durawait/internal/temporalconn"
	"github.com/durawait/durawait/internal/waits"
)

const waitsUsage = `usage: durawait waits <list|show|cancel> [flags]

  list [--running] [--tool T] [--caller C] [--limit N] [--json]
                 the waits, in the engine's order (embedded: running ones first):
                 ID, tool, state, caller, started, summary
  show ID [--json]
                 a wait's call, every state change, its last observation and result
  cancel ID      cancel a running wait; its history names you as who cancelled it

Every subcommand finds the engine of the data dir (--data-dir, or the config's
data_dir) through its lock file, in the namespace that durawait serves
(unless --namespace says another), or talks to --temporal HOST:PORT (--namespace).
`

// waitsTimeout bounds one waits command.
const waitsTimeout = 30 * time.Second

// runWaits is `durawait waits`: the operator's view of the waits.
func runWaits(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, waitsUsage)
		return errUsage
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("durawait waits "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := config.Default()
	var (
		file    = fs.String("config", "", "TOML config file (its data_dir, temporal and namespace)")
		dataDir = fs.String("data-dir", def.DataDir, "data dir whose running durawait's engine to use")
		conn    = registerTemporalFlags(fs)
		asJSON  = fs.Bool("json", false, "print JSON for scripts instead of a table")
		opts    waits.ListOptions
	)
	switch sub {
	case "list":
		fs.BoolVar(&opts.Running, "running", false, "only the waits that run now")
		fs.StringVar(&opts.Tool, "tool", "", "only one tool's waits (wait_for, wait_for_text, start_agent, ...)")
		fs.StringVar(&opts.Caller, "caller", "", "only one caller's waits (its principal)")
		fs.IntVar(&opts.Limit, "limit", waits.DefaultLimit, "at most this many waits")
	case "show", "cancel":
	case "help", "-h", "--help":
		fmt.Fprint(stdout, waitsUsage)
		return nil
	default:
		fmt.Fprintf(stderr, "durawait waits: unknown subcommand %q\n\n%s", sub, waitsUsage)
		return errUsage
	}
	id, err := parseWithID(fs, rest, sub != "list")
	if err != nil {
		return err
	}
	if sub == "cancel" && *asJSON {
		return errors.New("--json: cancel prints one line, not JSON (check the outcome with durawait waits show ID --json)")
	}
	if sub == "list" && opts.Limit < 1 {
		return fmt.Errorf("--limit: must be at least 1, got %d", opts.Limit)
	}

	cfg := def
	if *file != "" {
		if cfg, err = config.Load(*file); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "data-dir" {
			cfg.DataDir = *dataDir
		}
	})
	if err := cfg.ResolveTemporal(conn.layer(), nil, configName(*file)); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	addr, ownerNamespace, err := waitsEngine(cfg)
	if err != nil {
		return err
	}
	if ownerNamespace != "" && cfg.Connection.Sources["namespace"] != temporalconn.FlagsName {
		// The serve that owns the data dir runs its waits in its own
		// namespace: only --namespace asks for another.
		cfg.Namespace = ownerNamespace
	}
	ctx, cancel := context.WithTimeout(ctx, waitsTimeout)
	defer cancel()
	dial, err := cfg.Connection.ClientOptions()
	if err != nil {
		return err
	}
	dial.HostPort, dial.Namespace, dial.Identity = addr, cfg.Namespace, waits.OperatorIdentity()
	if cfg.Temporal == "" {
		// The data dir's engine lets in only its certificate.
		if dial.ConnectionOptions.TLS, err = enginecreds.FilesIn(cfg.DataDir).ClientTLS(); err != nil {
			return fmt.Errorf("--data-dir %s: %w", cfg.DataDir, err)
		}
	}
	dial.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	tc, err := client.DialContext(ctx, dial)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", addr, err)
	}
	defer tc.Close()

	switch sub {
	case "list":
		ws, notes, err := waits.List(ctx, tc, cfg.Namespace, opts)
		for _, n := range notes {
			fmt.Fprintln(stderr, "note:", n)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			if ws == nil {
				ws = []waits.Wait{}
			}
			return waits.WriteJSON(stdout, ws)
		}
		return waits.WriteTable(stdout, ws)
	case "show":
		d, err := waits.Show(ctx, tc, id)
		if err != nil {
			return err
		}
		if *asJSON {
			return waits.WriteJSON(stdout, d)
		}
		return waits.WriteDetail(stdout, d)
	default: // cancel
		if err := waits.Cancel(ctx, tc, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "cancel requested for wait %s (as %s)\n", id, waits.OperatorIdentity())
		return nil
	}
}

// parseWithID parses a subcommand's flags, before or after its one
// positional argument, the wait's ID, when it takes one.
func parseWithID(fs *flag.FlagSet, args []string, wantID bool) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", errUsage // the flag package has printed why
	}
	var id string
	if wantID && fs.NArg() > 0 {
		id = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", errUsage
		}
	}
	switch {
	case fs.NArg() > 0:
		return "", fmt.Errorf("%s: unexpected arguments: %v", fs.Name(), fs.Args())
	case wantID && id == "":
		return "", fmt.Errorf("%s: the wait's ID is required (see durawait waits list)", fs.Name())
	}
	return id, nil
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
