package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/datadir"
)

// daemonStartTimeout bounds how long a stdio process waits for a daemon to
// become ready (its own, or one another process is starting).
const daemonStartTimeout = 90 * time.Second

// daemonStarter finds the daemon that owns a data dir, or starts it.
type daemonStarter struct {
	dataDir string   // absolute
	args    []string // the stdio process's serve flags, reused by the daemon
	// settings are the session's configuration (config.Config.Settings),
	// which the daemon's must equal.
	settings map[string]json.RawMessage
	logger   *slog.Logger
}

// connect returns the MCP URL of the process that owns the data dir,
// starting a background daemon when none does. Spawning is serialized by
// the data dir's spawn lock, so stdio processes that start together end up
// with one daemon.
func (d *daemonStarter) connect(ctx context.Context, restart bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, daemonStartTimeout)
	defer cancel()
	if !restart {
		if owner, ok := liveEndpoint(ctx, d.dataDir); ok {
			return owner.HTTP, d.sameSettings(owner)
		}
	}
	release, err := datadir.SpawnLock(ctx, d.dataDir)
	if err != nil {
		return "", err
	}
	defer release()
	// Under the spawn lock, nobody else starts a daemon: look again.
	for {
		owner, held, err := datadir.Inspect(d.dataDir)
		if err != nil {
			return "", err
		}
		if !held {
			break
		}
		if owner.PID != 0 && owner.HTTP == "" {
			return "", fmt.Errorf("data dir %s is owned by pid %d, which serves MCP on no HTTP endpoint "+
				"(a `durawait serve --stdio --no-daemon`?); stop it, or use another --data-dir", d.dataDir, owner.PID)
		}
		if owner.HTTP != "" && healthy(ctx, owner.HTTP) {
			return owner.HTTP, d.sameSettings(owner)
		}
		// Starting, or stopping: look again shortly.
		if err := pause(ctx); err != nil {
			return "", fmt.Errorf("the durawait process (pid %d) that owns %s did not become ready: %w", owner.PID, d.dataDir, err)
		}
	}
	return d.spawn(ctx)
}

// spawn starts the daemon, detached, and waits until it answers /healthz.
func (d *daemonStarter) spawn(ctx context.Context) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the durawait executable: %w", err)
	}
	logPath := datadir.LogPath(d.dataDir)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("open the daemon's log file: %w", err)
	}
	defer logFile.Close()
	if err := logFile.Chmod(0o600); err != nil {
		return "", fmt.Errorf("make the daemon's log file private: %w", err)
	}
	args := d.daemonArgs()
	cmd := exec.Command(self, args...)
	// Its own session and process group, no terminal, stdin /dev/null, no
	// parent-death signal: it outlives the session that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start the durawait daemon: %w", err)
	}
	d.logger.Info("started the durawait daemon", "pid", cmd.Process.Pid, "data_dir", d.dataDir, "log", logPath)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	for {
		select {
		case err := <-exited:
			return "", fmt.Errorf("the durawait daemon exited during start-up (%v); its log %s ends with:\n%s", err, logPath, logTail(logPath))
		default:
		}
		if owner, err := datadir.ReadOwner(d.dataDir); err == nil && owner.PID == cmd.Process.Pid && owner.HTTP != "" && healthy(ctx, owner.HTTP) {
			return owner.HTTP, nil
		}
		if err := pause(ctx); err != nil {
			return "", fmt.Errorf("the durawait daemon (pid %d) did not become ready within %s; see its log %s", cmd.Process.Pid, daemonStartTimeout, logPath)
		}
	}
}

// liveEndpoint is the owner of the data dir when it is alive and ready
// (its MCP URL is owner.HTTP). It takes no lock, so it never disturbs a
// process starting there.
func liveEndpoint(ctx context.Context, dir string) (datadir.Owner, bool) {
	owner, err := datadir.ReadOwner(dir)
	if err != nil || owner.HTTP == "" || !alive(owner.PID) {
		return datadir.Owner{}, false
	}
	return owner, healthy(ctx, owner.HTTP)
}

// daemonArgs are the arguments of the daemon this session would start.
func (d *daemonStarter) daemonArgs() []string {
	args := append([]string{"serve"}, d.args...)
	return append(args, "--daemon", "--data-dir", d.dataDir)
}

// SettingsMismatchError refuses a stdio session whose configuration (its
// config file's contents or its flags) differs from that of the daemon
// that runs on its data dir: the session would silently get the daemon's
// tools, config and flags instead of its own.
type SettingsMismatchError struct {
	// Dir is the shared data dir and Owner the daemon on it.
	Dir   string
	Owner datadir.Owner
	// Keys are the configuration keys that differ.
	Keys []string
	// Own are this session's arguments, as the daemon it would start
	// would have them.
	Own []string
	// Stop is the command that stops the daemon.
	Stop string
}

func (e *SettingsMismatchError) Error() string {
	var path string
	if slices.Contains(e.Keys, config.PathSetting) {
		path = " (the daemon finds agent CLIs on the PATH of the session that started it: set [agents] path in the config, " +
			"and every session's daemon finds the same CLIs, whatever environment its client gives it)"
	}
	return fmt.Sprintf("the durawait daemon on data dir %s (pid %d, `durawait %s`) runs with another configuration than this session's "+
		"(`durawait %s`): they differ in %s%s. A session shares its data dir's daemon, so it is refused rather than served with the daemon's. "+
		"Stop the daemon (%s; its waits resume at the next start) and the next session starts it with this configuration; "+
		"or give this session the daemon's flags, or a data dir of its own (--data-dir)",
		e.Dir, e.Owner.PID, strings.Join(e.Owner.Args, " "), strings.Join(e.Own, " "), strings.Join(e.Keys, ", "), path, e.Stop)
}

// sameSettings refuses a daemon whose configuration is not this
// session's. A foreground serve that owns the data dir is not compared
// (sessions bridge to it, whatever its flags: README), nor a daemon of a
// release that did not record its configuration.
func (d *daemonStarter) sameSettings(owner datadir.Owner) error {
	if owner.Log == "" || owner.Settings == nil {
		return nil
	}
	own := d.settings
	if _, recorded := owner.Settings[config.PathSetting]; !recorded {
		// A daemon of a release that did not record its PATH.
		own = maps.Clone(own)
		delete(own, config.PathSetting)
	}
	keys := config.SettingsDiff(owner.Settings, own)
	if len(keys) == 0 {
		return nil
	}
	return &SettingsMismatchError{Dir: d.dataDir, Owner: owner, Keys: keys, Own: d.daemonArgs(),
		Stop: stopCommand(datadir.Instance{Dir: d.dataDir, Owner: owner})}
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// healthy reports whether /healthz beside the MCP URL answers 200.
func healthy(ctx context.Context, mcpURL string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := probe(ctx, strings.TrimSuffix(mcpURL, "/mcp")+"/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// probe GETs one of durawait's own health endpoints at url directly: no
// proxy from the environment, no connection kept.
func probe(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	return (&http.Client{Transport: tr}).Do(req)
}

// pause waits a little before the next look, or returns ctx's error.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

// logTail is the end of a log file, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// daemonConfig adapts the configuration to the background daemon: MCP on a
// loopback port of its own (a fixed one would clash with a user's
// `durawait serve`), and the engine and UI ports fall back to free ones
// when taken.
func daemonConfig(cfg config.Config, logger *slog.Logger) config.Config {
	cfg.Stdio = false
	cfg.HTTP = "127.0.0.1:0"
	if cfg.EnginePort != 0 && !portFree(cfg.EnginePort) {
		logger.Warn("engine port taken; the engine listens on a free port", "engine_port", cfg.EnginePort)
		cfg.EnginePort = 0
	}
	if cfg.UI && cfg.UIPort != 0 && !portFree(cfg.UIPort) {
		port, err := freePort()
		if err != nil {
			logger.Warn("UI port taken and no free port found; no Web UI", "ui_port", cfg.UIPort, "error", err)
			port = 0
		} else {
			logger.Warn("UI port taken; the Web UI listens on a free port", "ui_port", cfg.UIPort, "now", port)
		}
		cfg.UIPort = port
	}
	return cfg
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
