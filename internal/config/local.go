package config

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"sort"
	"time"
)

// LocalServerName is the name of the built-in probe server: its tools are
// local.<tool>, and no [[mcp_servers]] may take the name while it is on.
const LocalServerName = "local"

// Local configures the built-in probe server, `local` (docs/probes.md):
// read-only probes of durawait's own machine, on by default, reaching
// loopback addresses only unless configured.
type Local struct {
	// Enabled turns the server on (default true).
	Enabled *bool `toml:"enabled"`
	// Hosts are the hosts beyond loopback that http_request and
	// tcp_connect may reach: names, "*.domain" wildcards, addresses or
	// CIDR prefixes. Link-local addresses are refused whatever it says.
	Hosts []string `toml:"hosts"`
	// Paths are the absolute folders file_stat and file_read may read
	// (none by default: the file probes are off).
	Paths []string `toml:"paths"`
	// Commands are the commands run_command may run, by name, each an
	// argument vector run as it is (none by default: no run_command).
	Commands map[string][]string `toml:"commands"`
	// TimeoutSec bounds one probe call (default 10).
	TimeoutSec int `toml:"timeout_sec"`
	// Expose re-exposes the probes as tools of their own (default false:
	// they are wait_for's probes).
	Expose bool `toml:"expose"`
}

// On reports whether the built-in probe server may run: local.enabled, or
// true when it is not set (see LocalProbesOn for when it does).
func (l Local) On() bool { return l.Enabled == nil || *l.Enabled }

// LocalProbesOn says whether the built-in probes run in this process's
// worker, front telling whether an MCP front end runs beside it:
// local.enabled when set; otherwise on where every caller is on this
// machine (stdio, or HTTP on a loopback address), off for a worker with
// no front end beside it and for a front end that listens beyond
// loopback, whose callers come from elsewhere (the operator turns them on).
func (c Config) LocalProbesOn(front bool) bool {
	if c.Local.Enabled != nil {
		return *c.Local.Enabled
	}
	if !front {
		return false
	}
	if c.Stdio {
		return true
	}
	host, _, err := net.SplitHostPort(c.HTTP)
	return err == nil && isLoopback(host)
}

// Timeout bounds one probe call.
func (l Local) Timeout() time.Duration { return time.Duration(l.TimeoutSec) * time.Second }

// CommandNames are the names of the allowed commands, sorted.
func (l Local) CommandNames() []string {
	names := make([]string, 0, len(l.Commands))
	for n := range l.Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var (
	hostPattern        = regexp.MustCompile(`^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$`)
	commandNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
)

// maxLocalTimeoutSec bounds local.timeout_sec: a probe call is one sample
// of a wait that polls every few seconds.
const maxLocalTimeoutSec = 60

func (l Local) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, h := range l.Hosts {
		if _, err := netip.ParsePrefix(h); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(h); err == nil {
			continue
		}
		if !hostPattern.MatchString(h) {
			bad("local.hosts[%d]: %q must be a host name, a *.domain wildcard, an address or a CIDR prefix", i, h)
		}
	}
	for i, p := range l.Paths {
		if !filepath.IsAbs(p) {
			bad("local.paths[%d]: %q must be an absolute path", i, p)
		}
	}
	for _, name := range l.CommandNames() {
		argv := l.Commands[name]
		if !commandNamePattern.MatchString(name) {
			bad("local.commands.%s: the name must be 1 to 64 lowercase letters, digits, '_' or '-'", name)
		}
		if len(argv) == 0 || argv[0] == "" {
			bad("local.commands.%s: must be a non-empty argument vector, e.g. [\"git\", \"status\"]", name)
		}
	}
	if l.TimeoutSec < 1 || l.TimeoutSec > maxLocalTimeoutSec {
		bad("local.timeout_sec: must be 1 to %d, got %d", maxLocalTimeoutSec, l.TimeoutSec)
	}
	return errs
}
