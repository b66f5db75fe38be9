package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/durawait/durawait/internal/config"
)

// loadConfig parses a command's flags and merges them over the config file
// (flags win) and the defaults. extra registers a command's own flags.
func loadConfig(name string, args []string, stderr io.Writer, extra ...func(*flag.FlagSet)) (config.Config, error) {
	fs := flag.NewFlagSet("durawait "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := config.Default()
	var (
		file       = fs.String("config", "", "TOML config file (flags override it)")
		httpAddr   = fs.String("http", def.HTTP, "listen address of the MCP front end (streamable HTTP at /mcp) and /healthz")
		stdio      = fs.Bool("stdio", false, "serve MCP on stdin/stdout instead of HTTP; logs go to stderr")
		dataDir    = fs.String("data-dir", def.DataDir, "data dir of the embedded engine (SQLite) and the lock file")
		conn       = registerTemporalFlags(fs)
		taskQueue  = fs.String("task-queue", def.TaskQueue, "Temporal task queue of the workers")
		enginePort = fs.Int("engine-port", def.EnginePort, "gRPC port of the embedded engine (0 picks a free one)")
		uiPort     = fs.Int("ui-port", def.UIPort, "port of the embedded Temporal Web UI (0 disables it)")
		logLevel   = fs.String("log-level", def.LogLevel, "debug, info, warn or error")
		logFormat  = fs.String("log-format", def.LogFormat, "log line format: text or json")
		pprofAddr  = fs.String("pprof", "", "loopback HOST:PORT to serve Go's profiler on (/debug/pprof/); off by default")
		tmuxSocket = fs.String("tmux-socket", "", "tmux server socket for list_panes and wait_for_text (default: the user's default server)")
		tools      []string
	)
	for _, register := range extra {
		register(fs)
	}
	fs.Func("tool", "enable an opt-in tool: list_panes, wait_for_text (repeatable)", func(v string) error {
		tools = append(tools, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return config.Config{}, errUsage // the flag package has printed why
	}
	if fs.NArg() > 0 {
		return config.Config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	cfg := def
	if *file != "" {
		var err error
		if cfg, err = config.Load(*file); err != nil {
			return config.Config{}, err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "http":
			cfg.HTTP = *httpAddr
		case "stdio":
			cfg.Stdio = *stdio
		case "data-dir":
			cfg.DataDir = *dataDir
		case "task-queue":
			cfg.TaskQueue = *taskQueue
		case "engine-port":
			cfg.EnginePort = *enginePort
		case "ui-port":
			cfg.UIPort = *uiPort
		case "log-level":
			cfg.LogLevel = *logLevel
		case "log-format":
			cfg.LogFormat = *logFormat
		case "pprof":
			cfg.Pprof = *pprofAddr
		case "tmux-socket":
			cfg.Tmux.Socket = *tmuxSocket
		case "tool":
			cfg.Tools = tools
		}
	})
	if err := cfg.ResolveTemporal(conn.layer(), nil, configName(*file)); err != nil {
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
