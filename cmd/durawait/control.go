package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/durawait/durawait/internal/datadir"
)

// stopTimeout bounds how long `durawait stop` waits for the owner to exit.
const stopTimeout = 30 * time.Second

// runStatus is `durawait status`: the process that owns the data dir.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("status", args, stderr)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	owner, held, err := datadir.Inspect(dir)
	if err != nil {
		return err
	}
	if !held {
		fmt.Fprintf(stdout, "no durawait runs on data dir %s\n", dir)
		return nil
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
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// runStop is `durawait stop`: SIGTERM to the owner of the data dir, then
// wait (bounded) until it has let the data dir go.
func runStop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("stop", args, stderr)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	owner, held, err := datadir.Inspect(dir)
	if err != nil {
		return err
	}
	if !held {
		fmt.Fprintf(stdout, "no durawait runs on data dir %s\n", dir)
		return nil
	}
	if owner.PID <= 0 {
		return fmt.Errorf("data dir %s is owned by a process that has not written its pid yet; try again", dir)
	}
	if err := syscall.Kill(owner.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d: %w", owner.PID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	for {
		if _, held, err := datadir.Inspect(dir); err == nil && !held && exited(owner.PID) {
			fmt.Fprintf(stdout, "stopped durawait (pid %d) on data dir %s\n", owner.PID, dir)
			return nil
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("durawait (pid %d) has not exited %s after SIGTERM; kill it with kill -9 %d (no wait is lost)", owner.PID, stopTimeout, owner.PID)
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
