// Command durawait is an MCP server that gives AI agents durable waits.
//
//	durawait serve    everything in one process: embedded Temporal engine,
//	                  Web UI, worker and MCP front end
//	durawait worker   a worker only, against an existing Temporal (--temporal)
//	durawait front    an MCP front end only, against an existing Temporal
//	durawait status   show the background daemon of a data dir
//	durawait stop     stop it
//	durawait waits    list, show and cancel waits (operators)
//	durawait version  print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// defaultGCPercent is the garbage collector's target (GOGC) unless the
// environment sets one: a durawait holding thousands of waits keeps most of
// its memory live for minutes, and the default (100) lets the heap grow to
// twice that; 50 holds about a fifth less memory for a few percent more
// CPU (docs/performance.md).
const defaultGCPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "durawait:", err)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

const usage = `usage: durawait <command> [flags]

commands:
  serve     run everything in one process (embedded Temporal engine unless --temporal)
  worker    run a worker only, against --temporal HOST:PORT
  front     run an MCP front end only, against --temporal HOST:PORT
  status    show the process that owns the data dir (the daemon of stdio sessions)
  stop      stop it
  temporal-env  print the environment that points the Temporal CLI (or a
            split front / worker) at the data dir's embedded engine
  waits     list, show and cancel waits (durawait waits -h)
  version   print the version

Run 'durawait <command> -h' for the flags of a command.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, stdin, stdout, stderr)
	case "worker", "front":
		cfg, err := loadConfig(cmd, rest, stderr)
		if err != nil {
			return err
		}
		return runRoles(ctx, cmd, roles{worker: cmd == "worker", front: cmd == "front"}, cfg, stdin, stdout, stderr)
	case "status":
		return runStatus(ctx, rest, stdout, stderr)
	case "stop":
		return runStop(ctx, rest, stdout, stderr)
	case "temporal-env":
		return runTemporalEnv(rest, stdout, stderr)
	case "waits":
		return runWaits(ctx, rest, stdout, stderr)
	case "agent-supervise":
		code, err := runSupervise(rest, stderr)
		if err != nil {
			return err
		}
		os.Exit(code)
		return nil
	case "version", "--version":
		fmt.Fprintln(stdout, "durawait", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "durawait: unknown command %q\n\n%s", cmd, usage)
		return errUsage
	}
}
