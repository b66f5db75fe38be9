package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/datadir"
	"github.com/durawait/durawait/internal/enginecreds"
)

// stopTimeout bounds how long `durawait stop` waits for the owner to exit.
const stopTimeout = 30 * time.Second

// dataDirTarget is the data dir a control command (status, stop,
// temporal-env) looks at: the config's, --data-dir's, or the default one;
// named says whether a flag named it.
type dataDirTarget struct {
	cfg   config.Config
	named bool
}

// withDataDir is the setup of a control command: its flags are --config
// and --data-dir, which name the data dir it looks at (not the serving
// flags: it serves nothing).
func withDataDir(run func(ctx context.Context, t dataDirTarget, inv invocation) error) func(*flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		file := fs.String("config", "", "the config file the durawait was started with (its data_dir, or the data dir of that file)")
		dataDir := fs.String("data-dir", "", "the durawait's data dir (default: the config's, else the user's state dir)")
		return func(ctx context.Context, inv invocation) error {
			cfg := config.Default()
			if *file != "" {
				var err error
				if cfg, err = config.Load(*file); err != nil {
					return err
				}
			}
			if *dataDir != "" {
				cfg.DataDir = *dataDir
			}
			if cfg.DataDir == "" {
				return errors.New("no data dir: set --data-dir (neither XDG_STATE_HOME nor HOME is an absolute path)")
			}
			return run(ctx, dataDirTarget{cfg: cfg, named: *file != "" || *dataDir != ""}, inv)
		}
	}
}

// runStatus is `durawait status`: with --config or --data-dir, the
// process that owns that data dir; without, every durawait the user runs
// (the registry: internal/datadir), each with the flag that reaches it.
func runStatus(ctx context.Context, t dataDirTarget, inv invocation) error {
	stdout := inv.stdout
	dir, owner, held, err := inspectDataDir(t.cfg.DataDir)
	if err != nil {
		return err
	}
	if t.named {
		if !held {
			fmt.Fprintf(stdout, "no durawait runs on data dir %s\n", dir)
			printOthers(stdout, "status", dir)
			return nil
		}
		printOwner(ctx, stdout, dir, owner)
		return nil
	}
	running, err := datadir.Running()
	if err != nil {
		return fmt.Errorf("list the durawaits you run: %w", err)
	}
	if held && !slices.ContainsFunc(running, func(i datadir.Instance) bool { return i.Dir == dir }) {
		running = append(running, datadir.Instance{Dir: dir, Owner: owner})
	}
	if len(running) == 0 {
		fmt.Fprintf(stdout, "no durawait runs (for this user; the default data dir is %s)\n", dir)
		return nil
	}
	for i, r := range running {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printOwner(ctx, stdout, r.Dir, r.Owner)
		fmt.Fprintf(stdout, "reach it:  durawait status %s  (stop: durawait stop %s)\n", reachFlag(r), reachFlag(r))
	}
	return nil
}

// printOwner prints what status says of the owner of dir.
func printOwner(ctx context.Context, stdout io.Writer, dir string, owner datadir.Owner) {
	state := "starting"
	if owner.HTTP != "" && healthy(ctx, owner.HTTP) {
		state = "ready"
	}
	kind := "foreground durawait serve"
	if owner.Log != "" {
		kind = "background daemon"
	}
	fmt.Fprintf(stdout, "pid:       %d (%s, %s)\n", owner.PID, kind, state)
	fmt.Fprintf(stdout, "started:   %s\n", owner.StartedAt.Local().Format(time.RFC3339))
	if owner.Config != "" {
		fmt.Fprintf(stdout, "config:    %s\n", owner.Config)
	}
	if len(owner.Args) > 0 {
		fmt.Fprintf(stdout, "command:   durawait %s\n", strings.Join(owner.Args, " "))
	}
	fmt.Fprintf(stdout, "mcp:       %s\n", orNone(owner.HTTP))
	fmt.Fprintf(stdout, "engine:    %s\n", orNone(owner.Engine))
	fmt.Fprintf(stdout, "web ui:    %s\n", orNone(owner.UI))
	fmt.Fprintf(stdout, "data dir:  %s\n", dir)
	fmt.Fprintf(stdout, "log:       %s\n", orNone(owner.Log))
	if owner.Engine != "" {
		fmt.Fprintf(stdout, "temporal:  eval \"$(durawait temporal-env --data-dir %s)\"  (then: temporal workflow list)\n", shellQuote(dir))
	}
}

// reachFlag is the flag that names r's data dir to status and stop: its
// config file when it has one whose data dir it is, else --data-dir.
func reachFlag(r datadir.Instance) string {
	if r.Owner.Config != "" {
		if cfg, err := config.Load(r.Owner.Config); err == nil {
			if abs, err := filepath.Abs(cfg.DataDir); err == nil && abs == r.Dir {
				return "--config " + shellQuote(r.Owner.Config)
			}
		}
	}
	return "--data-dir " + shellQuote(r.Dir)
}

// stopCommand is the command that stops the durawait r.
func stopCommand(r datadir.Instance) string {
	return "durawait stop " + reachFlag(r)
}

// printOthers lists the durawaits the user runs on other data dirs than
// dir, with the command (cmd) and flag that reach each; it reports
// whether there is any.
func printOthers(stdout io.Writer, cmd, dir string) bool {
	running, err := datadir.Running()
	if err != nil {
		return false
	}
	found := false
	for _, r := range running {
		if r.Dir == dir {
			continue
		}
		if !found {
			fmt.Fprintln(stdout, "these durawaits run on other data dirs:")
			found = true
		}
		fmt.Fprintf(stdout, "  pid %d, data dir %s: durawait %s %s\n", r.Owner.PID, r.Dir, cmd, reachFlag(r))
	}
	return found
}

// runTemporalEnv is `durawait temporal-env`: the TEMPORAL_* variables
// (those the Temporal CLI and SDKs read) that reach the data dir's
// embedded engine with its client certificate, as shell export lines.
func runTemporalEnv(t dataDirTarget, stdout io.Writer) error {
	dir, owner, held, err := inspectDataDir(t.cfg.DataDir)
	if err != nil {
		return err
	}
	if !held || owner.Engine == "" {
		return fmt.Errorf("no embedded engine runs on data dir %s (start durawait serve there first)", dir)
	}
	files := enginecreds.FilesIn(dir)
	if _, err := files.ClientTLS(); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	for _, kv := range [][2]string{
		{"TEMPORAL_ADDRESS", owner.Engine},
		{"TEMPORAL_NAMESPACE", owner.Namespace},
		{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", files.CA},
		{"TEMPORAL_TLS_CLIENT_CERT_PATH", files.ClientCert},
		{"TEMPORAL_TLS_CLIENT_KEY_PATH", files.ClientKey},
	} {
		if kv[1] != "" {
			fmt.Fprintf(stdout, "export %s=%s\n", kv[0], shellQuote(kv[1]))
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// inspectDataDir reads who holds the data dir dataDir (made absolute).
func inspectDataDir(dataDir string) (dir string, owner datadir.Owner, held bool, err error) {
	if dir, err = filepath.Abs(dataDir); err != nil {
		return "", datadir.Owner{}, false, fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	if owner, held, err = datadir.Inspect(dir); err != nil {
		return "", datadir.Owner{}, false, fmt.Errorf("data dir %s: %w", dir, err)
	}
	return dir, owner, held, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// runStop is `durawait stop`: SIGTERM to the owner of the data dir, then
// wait (bounded) until it has let the data dir go. When none owns it but
// the user runs durawaits on other data dirs, it stops nothing and names
// them, each with the flag that stops it.
func runStop(ctx context.Context, t dataDirTarget, inv invocation) error {
	cfg, stdout := t.cfg, inv.stdout
	dir, owner, held, err := inspectDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	if !held {
		fmt.Fprintf(stdout, "no durawait runs on data dir %s\n", dir)
		if printOthers(stdout, "stop", dir) {
			return fmt.Errorf("nothing stopped: no durawait runs on data dir %s; stop one of the others with the command beside it", dir)
		}
		return nil
	}
	if owner.PID <= 0 {
		return fmt.Errorf("data dir %s is owned by a process that has not written its pid yet; try again", dir)
	}
	if err := syscall.Kill(owner.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d: %w", owner.PID, err)
	}
	// The config's drain_delay_sec comes first (readiness withdrawn, calls
	// still taken), then the drain.
	bound := stopTimeout + time.Duration(cfg.DrainDelaySec)*time.Second
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		if _, held, err := datadir.Inspect(dir); err == nil && !held && exited(owner.PID) {
			fmt.Fprintf(stdout, "stopped durawait (pid %d) on data dir %s\n", owner.PID, dir)
			return nil
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("durawait (pid %d) has not exited %s after SIGTERM; kill it with kill -9 %d (no wait is lost)", owner.PID, bound, owner.PID)
		}
	}
}

// exited reports whether pid is gone (or a zombie: dead, not yet reaped by
// its parent).
func exited(pid int) bool {
	if !alive(pid) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc: trust kill(pid, 0)
	}
	// pid (comm) state ...
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return len(bytes.TrimSpace(rest)) > 0 && bytes.TrimSpace(rest)[0] == 'Z'
}
