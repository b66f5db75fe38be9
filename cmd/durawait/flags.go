package main

import (
	"flag"
	"fmt"

	"github.com/durawait/durawait/internal/config"
)

// configFlags are the flags of the configuration, shared by the commands
// that serve (serve, worker, front) and those that look at a data dir
// (status, stop, temporal-env). A flag set on the command line wins over
// the config file, which wins over the defaults.
type configFlags struct {
	fs                                 *flag.FlagSet
	file, httpAddr, dataDir, taskQueue *string
	logLevel, logFormat, pprofAddr     *string
	tmuxSocket                         *string
	stdio, noUI                        *bool
	enginePort, uiPort                 *int
	conn                               *temporalFlags
	tools                              []string
}

// registerConfigFlags adds the configuration's flags to fs.
func registerConfigFlags(fs *flag.FlagSet) *configFlags {
	def := config.Default()
	f := &configFlags{
		fs:         fs,
		file:       fs.String("config", "", "TOML config file (flags override it)"),
		httpAddr:   fs.String("http", def.HTTP, "listen address of the MCP front end (streamable HTTP at /mcp) and /healthz"),
		stdio:      fs.Bool("stdio", false, "serve MCP on stdin/stdout instead of HTTP; logs go to stderr"),
		dataDir:    fs.String("data-dir", def.DataDir, "data dir of the embedded engine (SQLite) and the lock file"),
		conn:       registerTemporalFlags(fs),
		taskQueue:  fs.String("task-queue", def.TaskQueue, "Temporal task queue of the workers"),
		enginePort: fs.Int("engine-port", def.EnginePort, "gRPC port of the embedded engine (0 picks a free one)"),
		uiPort:     fs.Int("ui-port", def.UIPort, "port of the embedded Temporal Web UI (0 picks a free one)"),
		noUI:       fs.Bool("no-ui", false, "run no embedded Temporal Web UI"),
		logLevel:   fs.String("log-level", def.LogLevel, "debug, info, warn or error"),
		logFormat:  fs.String("log-format", def.LogFormat, "log line format: text or json"),
		pprofAddr:  fs.String("pprof", "", "loopback HOST:PORT to serve Go's profiler on (/debug/pprof/); off by default"),
		tmuxSocket: fs.String("tmux-socket", "", "tmux server socket for list_panes and wait_for_text (default: the user's default server)"),
	}
	fs.Func("tool", "enable an opt-in tool: list_panes, wait_for_text (repeatable)", func(v string) error {
		f.tools = append(f.tools, v)
		return nil
	})
	return f
}

// load merges the parsed flags over the config file (flags win) and the
// defaults, resolves the Temporal connection and validates the result.
func (f *configFlags) load() (config.Config, error) {
	cfg := config.Default()
	if *f.file != "" {
		var err error
		if cfg, err = config.Load(*f.file); err != nil {
			return config.Config{}, err
		}
	}
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "http":
			cfg.HTTP = *f.httpAddr
		case "stdio":
			cfg.Stdio = *f.stdio
		case "data-dir":
			cfg.DataDir = *f.dataDir
		case "task-queue":
			cfg.TaskQueue = *f.taskQueue
		case "engine-port":
			cfg.EnginePort = *f.enginePort
		case "ui-port":
			cfg.UIPort = *f.uiPort
		case "no-ui":
			cfg.UI = !*f.noUI
		case "log-level":
			cfg.LogLevel = *f.logLevel
		case "log-format":
			cfg.LogFormat = *f.logFormat
		case "pprof":
			cfg.Pprof = *f.pprofAddr
		case "tmux-socket":
			cfg.Tmux.Socket = *f.tmuxSocket
		case "tool":
			cfg.Tools = f.tools
		}
	})
	if err := cfg.ResolveTemporal(f.conn.layer(), nil, configName(*f.file)); err != nil {
		return config.Config{}, fmt.Errorf("configuration: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return config.Config{}, fmt.Errorf("configuration: %w", err)
	}
	return cfg, nil
}

// configName names durawait's config file in the Temporal connection's
// sources.
func configName(path string) string {
	if path == "" {
		return "durawait's defaults"
	}
	return path
}
