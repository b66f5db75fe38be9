package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/durawait/durawait/internal/config"
)

// rootCommand is durawait itself: the group of every command.
func rootCommand() *command {
	return &command{
		name:    "durawait",
		summary: "durawait: durable waits for AI agents, an MCP server on Temporal.",
		about:   exitStatusHelp,
		sub:     commands(),
	}
}

// commands is durawait's command table, the one place a command is
// declared: `durawait help` lists it from here, `durawait CMD -h` prints
// its flags from here, and run dispatches through it.
func commands() []command {
	return []command{
		{name: "serve", summary: "run everything in one process (embedded Temporal engine unless --temporal)",
			setup: serveCommand},
		{name: "worker", summary: "run a worker only, against --temporal HOST:PORT",
			setup: withConfig(roleAction("worker", roles{worker: true}))},
		{name: "front", summary: "run an MCP front end only, against --temporal HOST:PORT",
			setup: withConfig(roleAction("front", roles{front: true}))},
		{name: "status", summary: "show every durawait you run (or, with --config or --data-dir, the one that owns that data dir)",
			setup: withDataDir(runStatus)},
		{name: "stop", summary: "stop the durawait that owns the data dir (the config's, --data-dir's, or the default)",
			setup: withDataDir(runStop)},
		{name: "backup", summary: "copy the data dir (the embedded engine's database as of one moment, and the rest) to --to DIR, while durawait runs or not",
			setup: backupCommand},
		{name: "health", summary: "ask a running durawait's /healthz (or /readyz): exit 0 when it answers 200 (for HEALTHCHECK and exec probes)",
			setup: healthCommand},
		{name: "temporal-env", summary: "print the environment that points the Temporal CLI (or a split front / worker) at the data dir's engine",
			setup: withDataDir(func(_ context.Context, t dataDirTarget, inv invocation) error {
				return runTemporalEnv(t, inv.stdout)
			})},
		{name: "waits", summary: "list, show and cancel waits (operators)", about: waitsAbout, sub: []command{
			{name: "list", summary: "list the waits: ID, tool, state, caller, started, summary",
				about: "In the engine's order (embedded: running ones first, newest first).", setup: waitsList},
			{name: "show", args: []positional{waitID}, summary: "show a wait's call, every state change, its last observation and result",
				setup: waitsShow},
			{name: "cancel", args: []positional{waitID}, summary: "cancel a running wait; its history names you as who cancelled it",
				setup: waitsCancel},
		}},
		{name: "version", aliases: []string{"--version"}, summary: "print the version",
			setup: func(*flag.FlagSet) action {
				return func(_ context.Context, inv invocation) error {
					if hasEmbeddedEngine {
						fmt.Fprintln(inv.stdout, "durawait", version)
					} else {
						fmt.Fprintln(inv.stdout, "durawait", version, "(no embedded engine: front and worker on a Temporal cluster)")
					}
					return nil
				}
			}},
		{name: "agent-supervise", hidden: true, rest: "[-- COMMAND [ARG...]]",
			summary: "the detached parent of one agent CLI run (durawait starts it)", setup: superviseCommand},
	}
}

// withConfig is the setup of a command whose flags are the
// configuration's (configFlags): run gets the configuration they and the
// config file make.
func withConfig(run func(ctx context.Context, cfg config.Config, inv invocation) error) func(*flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		flags := registerConfigFlags(fs)
		return func(ctx context.Context, inv invocation) error {
			cfg, err := flags.load()
			if err != nil {
				return err
			}
			return run(ctx, cfg, inv)
		}
	}
}

// roleAction runs the roles r of `durawait name` (worker, front).
func roleAction(name string, r roles) func(context.Context, config.Config, invocation) error {
	return func(ctx context.Context, cfg config.Config, inv invocation) error {
		return runRoles(ctx, name, r, cfg, inv.stdin, inv.stdout, inv.stderr)
	}
}
