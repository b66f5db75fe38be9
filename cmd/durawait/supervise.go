package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/durawait/durawait/internal/agentproc"
)

// runSupervise is the hidden `agent-supervise` command: the detached parent
// of one agent CLI run (see package agentproc).
func runSupervise(args []string, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("durawait agent-supervise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "spool folder of the run")
	cwd := fs.String("cwd", "", "working directory of the CLI")
	stdin := fs.String("stdin", "", "file to feed the CLI on stdin")
	if err := fs.Parse(args); err != nil {
		return 2, errUsage
	}
	if *dir == "" {
		return 2, fmt.Errorf("agent-supervise: --dir is required")
	}
	// The command is in the spool folder (agentproc.ArgvFile), not on this
	// process's command line; one after -- is still taken.
	argv := fs.Args()
	if len(argv) == 0 {
		var err error
		if argv, err = agentproc.ReadArgv(*dir); err != nil {
			return 2, fmt.Errorf("agent-supervise: %w", err)
		}
	}
	return agentproc.Supervise(*dir, *cwd, *stdin, argv), nil
}
