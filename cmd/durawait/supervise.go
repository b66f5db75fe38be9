package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/durawait/durawait/internal/agentproc"
)

// superviseCommand is the setup of the hidden `agent-supervise` command:
// the detached parent of one agent CLI run (see package agentproc). It
// exits with the CLI's status.
func superviseCommand(fs *flag.FlagSet) action {
	dir := fs.String("dir", "", "spool folder of the run")
	cwd := fs.String("cwd", "", "working directory of the CLI")
	stdin := fs.String("stdin", "", "file to feed the CLI on stdin")
	maxOutput := fs.Int64("max-output", 0, "cap in bytes of each output file (0: uncapped)")
	return func(_ context.Context, inv invocation) error {
		if *dir == "" {
			return usageErrorf("--dir is required")
		}
		// The command is in the spool folder (agentproc.ArgvFile), not on
		// this process's command line; one after -- is still taken.
		argv := inv.rest
		if len(argv) == 0 {
			var err error
			if argv, err = agentproc.ReadArgv(*dir); err != nil {
				return fmt.Errorf("agent-supervise: %w", err)
			}
		}
		return exitWith(agentproc.Supervise(agentproc.Supervision{Dir: *dir, Cwd: *cwd, Stdin: *stdin, MaxOutput: *maxOutput, Argv: argv}))
	}
}
