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
	if *dir == "" || fs.NArg() == 0 {
		return 2, fmt.Errorf("agent-supervise: --dir and a command after -- are required")
	}
	return agentproc.Supervise(*dir, *cwd, *stdin, fs.Args()), nil
}
