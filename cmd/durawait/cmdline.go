package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// The command line: one table of commands (commands.go) from which both
// the help and the dispatch are derived, and one convention for the exit
// status, the same for every command (exitStatusHelp).

// exitStatusHelp closes `durawait help`: what a script may rely on.
const exitStatusHelp = `Exit status: 0 when the command did what it was asked, or printed the help
asked for (-h, --help, help); 1 when it ran and failed, a setting that does not
validate included (from the config file or a flag: --engine-port 70000); 2 when
the command line is wrong and nothing ran (an unknown command, flag or
argument, a missing or empty one, a flag value that does not parse, a
command's own argument out of range: --limit 0).`

// A command is one entry of a command table: a subcommand of durawait, or
// of a group of commands (waits). Its help line, its own help and its
// dispatch all come from the entry.
type command struct {
	// name selects it; aliases select it too, unlisted (--version).
	name    string
	aliases []string
	// summary is its line in its group's help and the first line of its
	// own help.
	summary string
	// about, when set, follows the summary in its help: rules that span
	// its flags or its subcommands.
	about string
	// hidden keeps it out of its group's help (agent-supervise: durawait
	// runs it, people do not).
	hidden bool
	// args are its positional arguments, each required, given before,
	// between or after its flags.
	args []positional
	// rest, when set, names the arguments it takes after its flags (in
	// its usage line); without it, arguments after the flags are refused.
	rest string
	// setup registers the command's flags on fs and returns what runs it
	// once they are parsed. Nil for a group.
	setup func(fs *flag.FlagSet) action
	// sub makes the command a group: its first argument names one of
	// these.
	sub []command
}

// positional is one required positional argument of a command.
type positional struct {
	// name stands for it in the usage line; missing says it is missing.
	name, missing string
}

// An action runs a command whose flags are parsed.
type action func(ctx context.Context, inv invocation) error

// invocation is one run of a command.
type invocation struct {
	// args are the command's arguments as given, after its name (serve
	// passes them on to the daemon it starts).
	args []string
	// positional are the values of the command's args, in order; rest
	// the arguments after its flags, when it takes them.
	positional, rest []string
	stdin            io.Reader
	stdout, stderr   io.Writer
}

// usageError is a command line durawait refuses before running anything:
// exit status 2.
type usageError struct {
	// cmd is the command line's commands ("durawait waits show"); msg
	// what is wrong ("" when help alone says it: no command given).
	cmd, msg string
	// help, when set, is printed after msg (a group's list of
	// commands); else a line pointing to the command's -h.
	help string
}

func (e *usageError) Error() string {
	if e.msg == "" {
		return e.cmd + ": a command is required"
	}
	return e.cmd + ": " + e.msg
}

// print writes the error and what to do about it to w.
func (e *usageError) print(w io.Writer) {
	if e.msg != "" {
		fmt.Fprintf(w, "%s: %s\n", e.cmd, e.msg)
		if e.help != "" {
			fmt.Fprintln(w)
		}
	}
	if e.help != "" {
		fmt.Fprint(w, e.help)
		return
	}
	fmt.Fprintf(w, "Run '%s -h' for usage.\n", e.cmd)
}

// usageErrorf is an action's refusal of its command line (a flag value
// out of range); the command fills in its name.
func usageErrorf(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// exitStatus ends durawait with a status of its own, printing nothing
// (agent-supervise exits with its CLI's status).
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// exitWith is nil for status 0, else the exitStatus.
func exitWith(status int) error {
	if status == 0 {
		return nil
	}
	return exitStatus(status)
}

// exitCode prints err as the exit status convention says and returns the
// status (exitStatusHelp).
func exitCode(err error, stderr io.Writer) int {
	var status exitStatus
	var usage *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &usage):
		usage.print(stderr)
		return 2
	default:
		fmt.Fprintln(stderr, "durawait:", err)
		return 1
	}
}

// isHelp reports whether arg asks a group for its help.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// run runs the command c, called path on the command line ("durawait
// waits"), with the arguments after its name.
func (c *command) run(ctx context.Context, path string, args []string, inv invocation) error {
	if c.sub != nil {
		return c.dispatch(ctx, path, args, inv)
	}
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	// durawait prints the errors and the help itself: help on stdout,
	// errors on stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	act := c.setup(fs)
	err := c.parse(fs, args, &inv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(inv.stdout, c.help(path, fs))
		return nil
	case err != nil:
		return &usageError{cmd: path, msg: err.Error()}
	}
	inv.args = args
	err = act(ctx, inv)
	var usage *usageError
	if errors.As(err, &usage) && usage.cmd == "" {
		usage.cmd = path
	}
	return err
}

// dispatch runs the command of the group c that args[0] names: `help CMD`
// is `CMD -h`.
func (c *command) dispatch(ctx context.Context, path string, args []string, inv invocation) error {
	if len(args) == 0 {
		return &usageError{cmd: path, help: c.groupHelp(path)}
	}
	name, rest := args[0], args[1:]
	if name == "help" && len(rest) > 0 {
		return c.dispatch(ctx, path, append(append([]string{}, rest...), "-h"), inv)
	}
	if isHelp(name) {
		fmt.Fprint(inv.stdout, c.groupHelp(path))
		return nil
	}
	for i := range c.sub {
		sub := &c.sub[i]
		if sub.name == name || slices.Contains(sub.aliases, name) {
			return sub.run(ctx, path+" "+sub.name, rest, inv)
		}
	}
	kind := "command"
	if strings.Contains(path, " ") {
		kind = "subcommand"
	}
	return &usageError{cmd: path, msg: fmt.Sprintf("unknown %s %q", kind, name), help: c.groupHelp(path)}
}

// parse parses a command's flags and positional arguments into inv.
func (c *command) parse(fs *flag.FlagSet, args []string, inv *invocation) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	// A positional argument may come before, between or after the flags.
	for len(inv.positional) < len(c.args) && fs.NArg() > 0 {
		inv.positional = append(inv.positional, fs.Arg(0))
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return err
		}
	}
	switch {
	case c.rest != "":
		inv.rest = fs.Args()
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if n := len(inv.positional); n < len(c.args) {
		return errors.New(c.args[n].missing)
	}
	for i, v := range inv.positional {
		if v == "" {
			// An empty argument is a missing one (a script's unset $ID).
			return errors.New(c.args[i].missing)
		}
	}
	return nil
}

// help is the help of the command c, whose flags are on fs.
func (c *command) help(path string, fs *flag.FlagSet) string {
	var b strings.Builder
	usage := []string{"usage:", path}
	for _, a := range c.args {
		usage = append(usage, a.name)
	}
	var flags int
	fs.VisitAll(func(*flag.Flag) { flags++ })
	if flags > 0 {
		usage = append(usage, "[flags]")
	}
	if c.rest != "" {
		usage = append(usage, c.rest)
	}
	fmt.Fprintf(&b, "%s\n\n%s\n", strings.Join(usage, " "), c.summary)
	if c.about != "" {
		fmt.Fprintf(&b, "\n%s\n", c.about)
	}
	if flags > 0 {
		b.WriteString("\nflags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return b.String()
}

// groupHelp is the help of the group c: its commands, one line each.
func (c *command) groupHelp(path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s <command> [flags]\n\n%s\n\ncommands:\n", path, c.summary)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, sub := range c.sub {
		if !sub.hidden {
			fmt.Fprintf(tw, "  %s\t%s\n", sub.name, sub.summary)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\nRun '%s <command> -h' for the flags of a command.\n", path)
	if c.about != "" {
		fmt.Fprintf(&b, "\n%s\n", c.about)
	}
	return b.String()
}
