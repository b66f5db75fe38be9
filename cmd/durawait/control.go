package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// runStatus is `durawait status`: the process that owns the data dir.
func runStatus(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	dir, owner, held, err := dataDirOwner(cfg, stdout)
	if err != nil || !held {
		return err
	}
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
	fmt.Fprintf(stdout, "mcp:       %s\n", orNone(owner.HTTP))
	fmt.Fprintf(stdout, "engine:    %s\n", orNone(owner.Engine))
	fmt.Fprintf(stdout, "web ui:    %s\n", orNone(owner.UI))
	fmt.Fprintf(stdout, "data dir:  %s\n", dir)
	fmt.Fprintf(stdout, "log:       %s\n", orNone(owner.Log))
	if owner.Engine != "" {
		fmt.Fprintf(stdout, "temporal:  eval \"$(durawait temporal-env --data-dir %s)\"  (then: temporal workflow list)\n", shellQuote(dir))
	}
	return nil
}

// runTemporalEnv is `durawait temporal-env`: the TEMPORAL_* variables
// (those the Temporal CLI and SDKs read) that reach the data dir's
// embedded engine with its client certificate, as shell export lines.
func runTemporalEnv(cfg config.Config, stdout io.Writer) error {
	dir, owner, held, err := dataDirOwner(cfg, io.Discard)
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

// dataDirOwner inspects the configuration's data dir; when no process
// holds it, it says so on stdout.
func dataDirOwner(cfg config.Config, stdout io.Writer) (dir string, owner datadir.Owner, held bool, err error) {
	if dir, owner, held, err = inspectDataDir(cfg.DataDir); err != nil {
		return "", datadir.Owner{}, false, err
	}
	if !held {
		fmt.Fprintf(stdout, "no durawait runs on data dir %s\n", dir)
	}
	return dir, owner, held, nil
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
// wait (bounded) until it has let the data dir go.
func runStop(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	dir, owner, held, err := dataDirOwner(cfg, stdout)
	if err != nil || !held {
		return err
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
