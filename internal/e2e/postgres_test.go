package e2e

import (
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// postgres is a throwaway PostgreSQL cluster: its own data folder, a free
// port on 127.0.0.1, its unix socket in its own folder, and a superuser
// that needs no password (trust authentication, loopback only).
type postgres struct {
	// Host and Port are where it listens; User is its superuser.
	Host, User string
	Port       int
	dir        string
	binDir     string
	asUser     string // run its commands as this user ("": as ourselves)
}

// pgBinDir is where the PostgreSQL server programs are: $DURAWAIT_PG_BIN,
// else Debian's PostgreSQL 15.
func pgBinDir() string {
	if dir := os.Getenv("DURAWAIT_PG_BIN"); dir != "" {
		return dir
	}
	return "/usr/lib/postgresql/15/bin"
}

// startPostgres initializes and starts a PostgreSQL cluster in a temporary
// folder, stopped and removed when the test ends. PostgreSQL refuses to run
// as root, so as root its programs run as the postgres user
// (`runuser -u postgres --`), in a folder that user owns.
func startPostgres(t testing.TB) *postgres {
	t.Helper()
	bin := pgBinDir()
	_, err := os.Stat(filepath.Join(bin, "initdb"))
	require.NoError(t, err, "PostgreSQL is needed (apt-get install -y postgresql; .ci/run installs it)")

	// Not t.TempDir(): its parents are private to us, and the postgres
	// user must reach the folder.
	dir, err := os.MkdirTemp("", "durawait-pg-")
	require.NoError(t, err)
	pg := &postgres{Host: "127.0.0.1", User: "temporal", dir: dir, binDir: bin}
	if os.Geteuid() == 0 {
		pg.asUser = "postgres"
		u, err := user.Lookup(pg.asUser)
		require.NoError(t, err, "running as root, PostgreSQL runs as the postgres user")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	_, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	pg.Port, _ = strconv.Atoi(port)
	data := filepath.Join(dir, "data")
	pg.run(t, "initdb", "--pgdata", data, "--username", pg.User, "--auth", "trust", "--encoding", "UTF8", "--no-sync")
	// A throwaway cluster: durability settings off, for speed.
	opts := "-c listen_addresses=127.0.0.1 -p " + port + " -k " + dir +
		" -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
	pg.run(t, "pg_ctl", "start", "--pgdata", data, "--wait", "--timeout", "60", "--log", filepath.Join(dir, "postgres.log"), "-o", opts)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "postgres.log")); err == nil {
				t.Logf("postgres log:\n%s", b)
			}
		}
		_ = pg.command("pg_ctl", "stop", "--pgdata", data, "--mode", "immediate", "--wait").Run()
	})
	return pg
}

// command is one of PostgreSQL's programs, run as the cluster's user.
// It runs in the cluster's folder, which that user can enter.
func (pg *postgres) command(program string, args ...string) *exec.Cmd {
	path := filepath.Join(pg.binDir, program)
	cmd := exec.Command(path, args...)
	if pg.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", pg.asUser, "--", path}, args...)...)
	}
	cmd.Dir = pg.dir
	return cmd
}

func (pg *postgres) run(t testing.TB, program string, args ...string) {
	t.Helper()
	out, err := pg.command(program, args...).CombinedOutput()
	require.NoError(t, err, "%s: %s", program, out)
}

// Addr is host:port.
func (pg *postgres) Addr() string { return net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port)) }

// pid is the PostgreSQL server's process ID (the first line of its
// postmaster.pid); its backends are its children.
func (pg *postgres) pid(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pg.dir, "data", "postmaster.pid"))
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	require.NoError(t, err, "postmaster.pid")
	return pid
}
