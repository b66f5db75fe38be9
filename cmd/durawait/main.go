// Command durawait is an MCP server that gives AI agents durable waits.
//
// Its commands (serve, worker, front, status, stop, temporal-env, waits,
// version) are declared in one table, commands.go, from which `durawait
// help` and the dispatch are derived; cmdline.go holds the exit status
// convention (0 done or help, 1 failed, 2 a wrong command line).
package main

import (
	"context"
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
	code := cli(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli runs the command line args and returns durawait's exit status, having
// printed what went wrong, if anything, on stderr.
func cli(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return exitCode(run(ctx, args, stdin, stdout, stderr), stderr)
}

// run runs the command of the command table that args names.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return rootCommand().dispatch(ctx, "durawait", args, invocation{stdin: stdin, stdout: stdout, stderr: stderr})
}
