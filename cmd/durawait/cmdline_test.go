package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/datadir"
)

// runCLI runs durawait's command line in process, as main does, and
// returns its exit status, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// visible are the commands `durawait help` lists: every command durawait
// had before its commands became a table.
var visible = []string{"serve", "worker", "front", "status", "stop", "backup", "health", "temporal-env", "waits", "version"}

func TestHelpListsEveryCommandOfTheTable(t *testing.T) {
	var names []string
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	assert.Equal(t, visible, names, "no command was dropped or added unlisted")

	for _, ask := range []string{"help", "-h", "-help", "--help"} {
		code, out, errOut := runCLI(t, ask)
		assert.Equal(t, 0, code, ask)
		assert.Empty(t, errOut, ask)
		assert.True(t, strings.HasPrefix(out, "usage: durawait <command> [flags]\n"), "%s:\n%s", ask, out)
		for _, c := range commands() {
			line := "\n  " + c.name + " "
			if c.hidden {
				assert.NotContains(t, out, line, "%s lists the hidden %s", ask, c.name)
				continue
			}
			require.Contains(t, out, line, ask)
			after := out[strings.Index(out, line)+len(line):]
			assert.Equal(t, c.summary, strings.TrimSpace(after[:strings.Index(after, "\n")]), "%s: %s's line", ask, c.name)
		}
		assert.Contains(t, out, "Exit status: 0 when", "the help says what a script may rely on")
	}
}

// leaves are every command of the table that runs (not a group), with
// their command line.
func leaves(path string, table []command) map[string]command {
	out := map[string]command{}
	for _, c := range table {
		if c.sub != nil {
			for p, sub := range leaves(path+" "+c.name, c.sub) {
				out[p] = sub
			}
			continue
		}
		out[path+" "+c.name] = c
	}
	return out
}

// Every command, hidden ones too, prints its usage, its summary and
// every flag it takes on stdout and exits 0, however its help is asked
// for; `durawait serve -h` used to exit 1.
func TestEveryCommandsHelpExitsZero(t *testing.T) {
	all := leaves("durawait", commands())
	require.Contains(t, all, "durawait waits show")
	for path, c := range all {
		args := strings.Fields(strings.TrimPrefix(path, "durawait "))
		fs := flag.NewFlagSet(path, flag.ContinueOnError)
		c.setup(fs)
		for _, ask := range [][]string{slices.Concat(args, []string{"-h"}), slices.Concat(args, []string{"--help"}), slices.Concat([]string{"help"}, args)} {
			code, out, errOut := runCLI(t, ask...)
			assert.Equal(t, 0, code, "%v", ask)
			assert.Empty(t, errOut, "%v", ask)
			assert.True(t, strings.HasPrefix(out, "usage: "+path), "%v:\n%s", ask, out)
			assert.Contains(t, out, "\n"+c.summary+"\n", "%v", ask)
			fs.VisitAll(func(f *flag.Flag) { assert.True(t, listsFlag(out, f.Name), "%v lists -%s", ask, f.Name) })
		}
	}
	for _, group := range [][]string{{"waits", "-h"}, {"waits", "--help"}, {"waits", "help"}, {"help", "waits"}} {
		code, out, errOut := runCLI(t, group...)
		assert.Equal(t, 0, code, "%v", group)
		assert.Empty(t, errOut, "%v", group)
		for _, sub := range []string{"list", "show", "cancel"} {
			assert.Contains(t, out, "\n  "+sub+" ", "%v", group)
		}
		assert.Contains(t, out, "--data-dir, or the config's", "%v: the rules of every subcommand", group)
	}
}

// listsFlag reports whether a command's help lists the flag name.
func listsFlag(help, name string) bool {
	return regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `( |$)`).MatchString(help)
}

// The flags scripts pass keep their names.
func TestCommandsKeepTheirFlags(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"serve": {"config", "http", "stdio", "data-dir", "temporal", "namespace", "api-key", "tls", "tls-ca-path", "tls-cert-path",
			"tls-key-path", "tls-server-name", "tls-disable-host-verification", "temporal-profile", "temporal-config-file",
			"task-queue", "engine-port", "ui-port", "log-level", "log-format", "pprof", "tmux-socket", "tool", "no-daemon", "daemon"},
		"worker":          {"config", "http", "temporal", "tool"},
		"status":          {"config", "data-dir"},
		"waits list":      {"config", "data-dir", "temporal", "namespace", "json", "running", "tool", "caller", "state", "since", "limit"},
		"waits cancel":    {"config", "data-dir", "temporal", "reason"},
		"agent-supervise": {"dir", "cwd", "stdin"},
		"temporal-env":    {"config", "data-dir"},
		"waits show":      {"json"},
		"front":           {"stdio", "http"},
		"stop":            {"config", "data-dir"},
		"version":         nil,
	} {
		_, out, _ := runCLI(t, append(strings.Fields(cmd), "-h")...)
		for _, f := range flags {
			assert.True(t, listsFlag(out, f), "%s lists -%s", cmd, f)
		}
		if flags == nil {
			assert.NotContains(t, out, "flags:", cmd)
		}
	}
	_, out, _ := runCLI(t, "waits", "cancel", "-h")
	assert.False(t, listsFlag(out, "json"), "cancel prints one line: it offers no -json")
	for _, cmd := range []string{"status", "stop", "temporal-env"} {
		_, out, _ := runCLI(t, cmd, "-h")
		for _, serving := range []string{"http", "stdio", "engine-port", "ui-port", "tool", "temporal", "log-level"} {
			assert.False(t, listsFlag(out, serving), "%s serves nothing: its help lists no -%s", cmd, serving)
		}
	}
}

func TestSinceTakesADurationOrATime(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	got, err := parseSince("90m", now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(-90*time.Minute), got)
	got, err = parseSince("2026-12-06T09:00:00Z", now)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC), got)
	_, err = parseSince("-5m", now)
	assert.Error(t, err)
}

// A wrong command line is refused with exit status 2 before anything
// runs, naming what is wrong on stderr; stdout stays empty.
func TestAWrongCommandLineExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"usage: durawait <command> [flags]", "\n  serve "}},
		{[]string{"frob"}, []string{`durawait: unknown command "frob"`, "\n  serve "}},
		{[]string{"help", "frob"}, []string{`durawait: unknown command "frob"`}},
		{[]string{"--frob"}, []string{`durawait: unknown command "--frob"`}},
		{[]string{"serve", "--frob"}, []string{"durawait serve: flag provided but not defined: -frob", "Run 'durawait serve -h' for usage."}},
		{[]string{"serve", "--engine-port", "x"}, []string{`durawait serve: invalid value "x" for flag -engine-port`}},
		{[]string{"worker", "--temporal"}, []string{"durawait worker: flag needs an argument: -temporal"}},
		{[]string{"status", "extra"}, []string{"durawait status: unexpected arguments: [extra]"}},
		{[]string{"version", "extra"}, []string{"durawait version: unexpected arguments: [extra]"}},
		{[]string{"waits"}, []string{"usage: durawait waits <command> [flags]", "\n  list "}},
		{[]string{"waits", "frob"}, []string{`durawait waits: unknown subcommand "frob"`, "\n  cancel "}},
		{[]string{"waits", "show"}, []string{"durawait waits show: the wait's ID is required (see durawait waits list)"}},
		{[]string{"waits", "show", "a", "b"}, []string{"durawait waits show: unexpected arguments: [b]"}},
		{[]string{"waits", "show", ""}, []string{"durawait waits show: the wait's ID is required (see durawait waits list)"}},
		{[]string{"waits", "list", "--limit", "0"}, []string{"durawait waits list: --limit: must be at least 1, got 0"}},
		{[]string{"waits", "cancel", "wait_for/abc", "--json"}, []string{"durawait waits cancel: flag provided but not defined: -json"}},
		{[]string{"waits", "list", "--state", "done"}, []string{`--state: "done" is not a wait's state (running, matched`}},
		{[]string{"waits", "list", "--since", "yesterday"}, []string{`--since: "yesterday" is neither a duration`}},
		{[]string{"agent-supervise"}, []string{"durawait agent-supervise: --dir is required"}},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Empty(t, out, "%v", tc.args)
		for _, want := range tc.want {
			assert.Contains(t, errOut, want, "%v", tc.args)
		}
	}
}

// A command that runs and fails exits 1, with one line naming why; a bad
// configuration, from a file or a flag, is such a failure.
func TestACommandThatFailsExitsOne(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--log-level", "chatty"}, `durawait: configuration: log_level: must be debug, info, warn or error, got "chatty"`},
		{[]string{"status", "--config", "/does/not/exist.toml"}, "/does/not/exist.toml"},
		{[]string{"worker", "--data-dir", dir}, "durawait worker needs a Temporal cluster: --temporal HOST:PORT"},
		{[]string{"front", "--data-dir", dir}, "durawait front needs a Temporal cluster: --temporal HOST:PORT"},
		{[]string{"temporal-env", "--data-dir", dir}, "no embedded engine runs on data dir " + dir},
		{[]string{"waits", "list", "--data-dir", filepath.Join(dir, "none")}, "no durawait runs on data dir"},
	} {
		t.Setenv("TEMPORAL_ADDRESS", "")
		code, _, errOut := runCLI(t, tc.args...)
		assert.Equal(t, 1, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
		assert.Equal(t, 1, strings.Count(errOut, "durawait:"), "%v: one line:\n%s", tc.args, errOut)
	}
}

func TestCommandsThatSucceedExitZero(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(t, args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.True(t, strings.HasPrefix(out, "durawait "+version), "%v: %s", args, out)
		assert.Equal(t, 1, strings.Count(out, "\n"), "%v: one line: %s", args, out)
		assert.Empty(t, errOut, "%v", args)
	}
	dir := t.TempDir()
	t.Setenv(datadir.RegistryEnv, t.TempDir()) // no other durawait runs
	for _, cmd := range []string{"status", "stop"} {
		code, out, errOut := runCLI(t, cmd, "--data-dir", dir)
		assert.Equal(t, 0, code, "%s: %s", cmd, errOut)
		assert.Equal(t, "no durawait runs on data dir "+dir+"\n", out, cmd)
	}
}

// agent-supervise exits with its CLI's status, printing nothing of its
// own; any other error prints one line.
func TestExitStatusOfAnError(t *testing.T) {
	var errOut bytes.Buffer
	assert.Equal(t, 0, exitCode(exitWith(0), &errOut))
	assert.Equal(t, 3, exitCode(exitWith(3), &errOut))
	assert.Empty(t, errOut.String())
	assert.Equal(t, 2, exitCode(&usageError{cmd: "durawait x", msg: "bad"}, &errOut))
	assert.Equal(t, "durawait x: bad\nRun 'durawait x -h' for usage.\n", errOut.String())
	errOut.Reset()
	assert.Equal(t, 1, exitCode(io.ErrUnexpectedEOF, &errOut))
	assert.Equal(t, "durawait: unexpected EOF\n", errOut.String())
}

// durawait health exits 0 when /healthz (or /readyz) answers 200, and 1
// when it answers otherwise or nobody answers.
func TestHealthAsksTheListener(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	defer srv.Close()
	code, out, _ := runCLI(t, "health", "--url", srv.URL)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `/healthz 200 {"path":"/healthz"}`)
	status = http.StatusServiceUnavailable
	code, out, errOut := runCLI(t, "health", "--url", srv.URL, "--ready")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "/readyz 503")
	assert.Contains(t, errOut, "answered 503")
	srv.Close()
	code, _, _ = runCLI(t, "health", "--url", srv.URL)
	assert.Equal(t, 1, code, "nobody answers")
	code, _, errOut = runCLI(t, "health", "--url", "127.0.0.1:8765")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--url: \"127.0.0.1:8765\" is not an http(s) URL")
}
