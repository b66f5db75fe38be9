package agentproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary doubles as the supervisor: with DURAWAIT_TEST_SUPERVISE
// set it runs Supervise on its arguments, as `durawait agent-supervise` does.
func TestMain(m *testing.M) {
	if os.Getenv("DURAWAIT_TEST_SUPERVISE") == "1" {
		args := os.Args[1:]
		var s Supervision
		for len(args) > 1 {
			switch args[0] {
			case "--dir":
				s.Dir = args[1]
			case "--cwd":
				s.Cwd = args[1]
			case "--stdin":
				s.Stdin = args[1]
			case "--max-output":
				s.MaxOutput, _ = strconv.ParseInt(args[1], 10, 64)
			}
			args = args[2:]
		}
		argv, err := ReadArgv(s.Dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		s.Argv = argv
		os.Exit(Supervise(s))
	}
	os.Exit(m.Run())
}

func launch(t *testing.T, argv []string, stdin []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	t.Setenv("DURAWAIT_TEST_SUPERVISE", "1")
	require.NoError(t, Start(Launch{Dir: dir, Argv: argv, Cwd: t.TempDir(), Stdin: stdin, Supervisor: []string{os.Args[0]}}))
	return dir
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(10 * time.Millisecond)
	}
}

func TestARunSpoolsItsOutputAndExitStatus(t *testing.T) {
	dir := launch(t, []string{"sh", "-c", `cat; echo "in $(pwd)" >&2; exit 7`}, []byte("the prompt on stdin"))
	waitFor(t, "the exit status", func() bool { _, ok := ExitCode(dir); return ok })
	code, _ := ExitCode(dir)
	assert.Equal(t, 7, code)
	out, _ := os.ReadFile(filepath.Join(dir, StdoutFile))
	assert.Equal(t, "the prompt on stdin", string(out))
	errOut, _ := os.ReadFile(filepath.Join(dir, StderrFile))
	assert.True(t, strings.HasPrefix(string(errOut), "in /"), "the CLI runs in its cwd")
	assert.True(t, Started(dir))
	waitFor(t, "the supervisor to end", func() bool { return !Running(dir) })
}

// A launch made again in the same folder (its launcher was killed before
// it saw the first supervisor's record, so a restarted host launched once
// more) runs no second CLI, whether the first CLI still runs or has ended.
func TestALaunchMadeAgainInTheSameFolderRunsTheCLIOnce(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	argv := []string{"sh", "-c", `echo run >> "$0"; sleep 0.3`, runs}
	dir := launch(t, argv, nil)
	first, err := os.ReadFile(filepath.Join(dir, SupervisorFile))
	require.NoError(t, err)
	again := Launch{Dir: dir, Argv: argv, Cwd: t.TempDir(), Supervisor: []string{os.Args[0]}}
	require.NoError(t, Start(again), "while the first CLI runs")
	waitFor(t, "the exit status", func() bool { _, ok := ExitCode(dir); return ok })
	require.NoError(t, Start(again), "after the first CLI ended")
	waitFor(t, "the supervisor to end", func() bool { return !Running(dir) })

	out, err := os.ReadFile(runs)
	require.NoError(t, err)
	assert.Equal(t, "run\n", string(out), "the CLI ran once")
	record, err := os.ReadFile(filepath.Join(dir, SupervisorFile))
	require.NoError(t, err)
	assert.Equal(t, string(first), string(record), "the first supervisor's claim stands")
	code, _ := ExitCode(dir)
	assert.Equal(t, 0, code)
}

func TestTerminateStopsTheWholeProcessGroup(t *testing.T) {
	// A CLI that ignores SIGTERM and has a child: SIGKILL after the grace
	// period ends both.
	childFile := filepath.Join(t.TempDir(), "child")
	dir := launch(t, []string{"sh", "-c", `trap '' TERM; sleep 1000 & echo $! > "$1"; wait`, "sh", childFile}, nil)
	waitFor(t, "the CLI to ignore SIGTERM and start its child", func() bool {
		b, err := os.ReadFile(childFile)
		return err == nil && len(strings.TrimSpace(string(b))) > 0
	})
	start := time.Now()
	Terminate(dir, 300*time.Millisecond)
	code, done := ExitCode(dir)
	require.True(t, done, "the exit status is recorded")
	assert.Equal(t, 128+9, code, "killed by SIGKILL after the grace period")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)

	b, _ := os.ReadFile(childFile)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	waitFor(t, "the CLI's child to be gone with its group", func() bool {
		if syscall.Kill(child, 0) != nil {
			return true
		}
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		i := strings.LastIndexByte(string(stat), ')')
		return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' // dead, awaiting its reaper
	})
}

func TestAMissingProgramIsRecorded(t *testing.T) {
	dir := launch(t, []string{"/no/such/cli"}, nil)
	waitFor(t, "the exit status", func() bool { _, ok := ExitCode(dir); return ok })
	code, _ := ExitCode(dir)
	assert.Equal(t, 127, code)
	errOut, _ := os.ReadFile(filepath.Join(dir, StderrFile))
	assert.Contains(t, string(errOut), "cannot start /no/such/cli")
}

// A pid is trusted only while it names the process recorded: after a
// container restart or a reboot the pid may be another process's, which
// neither counts as the run nor is signalled.
func TestAReusedPidIsNeitherTheRunNorSignalled(t *testing.T) {
	if _, ok := startTime(os.Getpid()); !ok {
		t.Skip("no /proc start times on this system: pids alone are trusted")
	}
	dir := t.TempDir()
	supervisor := filepath.Join(dir, SupervisorFile)
	self := os.Getpid()

	require.NoError(t, os.WriteFile(supervisor, []byte(processRecord(self)), 0o600))
	assert.True(t, Running(dir), "the recorded process itself")
	require.NoError(t, os.WriteFile(supervisor, []byte(strconv.Itoa(self)+" 1"), 0o600))
	assert.False(t, Running(dir), "the pid of a process that started at another time")
	require.NoError(t, os.WriteFile(supervisor, []byte(strconv.Itoa(self)+"\n"), 0o600))
	assert.True(t, Running(dir), "an earlier release's record (a pid alone) is trusted")
	for _, bad := range []string{"", "x", "0", "-3", "1 2 3"} {
		require.NoError(t, os.WriteFile(supervisor, []byte(bad), 0o600))
		assert.False(t, Running(dir), "malformed record %q", bad)
	}
	require.NoError(t, os.Remove(supervisor))

	// A process group whose recorded leader started at another time is
	// left alone; the same group recorded right is stopped.
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill() }()
	pgid := cmd.Process.Pid
	require.NoError(t, os.WriteFile(filepath.Join(dir, PgidFile), []byte(strconv.Itoa(pgid)+" 1"), 0o600))
	_, trusted := readProcess(filepath.Join(dir, PgidFile))
	assert.False(t, trusted)
	Terminate(dir, 50*time.Millisecond)
	select {
	case <-exited:
		t.Fatal("a group recorded with another start time was signalled")
	default:
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, PgidFile), []byte(processRecord(pgid)), 0o600))
	Terminate(dir, 50*time.Millisecond)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the recorded group was not stopped")
	}
}

// A supervisor that cannot write its claim into a folder another
// supervisor has claimed leaves the folder alone: no exit status is
// recorded for the other's run.
func TestASupervisorThatCannotClaimAClaimedRunRecordsNothing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, SupervisorFile), []byte(strconv.Itoa(os.Getpid())), 0o600))
	// The claim's temporary file cannot be written: a folder is in its way.
	require.NoError(t, os.Mkdir(filepath.Join(dir, SupervisorFile+"."+strconv.Itoa(os.Getpid())+".tmp"), 0o700))
	assert.Equal(t, 127, Supervise(Supervision{Dir: dir, Cwd: t.TempDir(), Argv: []string{"true"}}))
	_, recorded := ExitCode(dir)
	assert.False(t, recorded, "the other supervisor's run has no exit status")
}

// The prompt is not on the supervisor's command line, where every local
// user could read it (ps, /proc/<pid>/cmdline): the CLI's argument vector
// is in the spool folder (0600).
func TestThePromptIsNotOnTheSupervisorsCommandLine(t *testing.T) {
	const secret = "the-prompt-nobody-else-reads"
	dir := launch(t, []string{"sh", "-c", "cat /proc/$PPID/cmdline | tr '\\0' ' '; echo; echo " + secret}, nil)
	require.Eventually(t, func() bool { _, ok := ExitCode(dir); return ok }, 30*time.Second, 10*time.Millisecond)
	out, err := os.ReadFile(filepath.Join(dir, StdoutFile))
	require.NoError(t, err)
	supervisorLine, rest, _ := strings.Cut(string(out), "\n")
	assert.Contains(t, supervisorLine, "--dir "+dir, "the supervisor's command line: %q", supervisorLine)
	assert.NotContains(t, supervisorLine, secret)
	assert.Contains(t, rest, secret, "the CLI got its arguments")
	info, err := os.Stat(filepath.Join(dir, ArgvFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// A process the CLI started that left its process group (setsid) does not
// outlive a stopped run: once the CLI is gone, the supervisor, its
// subreaper, kills it. (Terminate signals only the CLI's group.)
func TestAStoppedRunLeavesNoSetsidChildBehind(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("child subreapers are Linux's")
	}
	pidFile := filepath.Join(t.TempDir(), "escaped.pid")
	dir := launch(t, []string{"sh", "-c", `setsid sleep 300 & echo $! > "$0"; sleep 300`, pidFile}, nil)
	var escaped int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		escaped, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	cliGroup, ok := readProcess(filepath.Join(dir, PgidFile))
	require.True(t, ok)
	require.Eventually(t, func() bool {
		pgid, err := syscall.Getpgid(escaped)
		return err == nil && pgid != cliGroup
	}, 30*time.Second, 5*time.Millisecond, "the child left the CLI's process group (setsid ran)")
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })

	Terminate(dir, 2*time.Second)
	_, done := ExitCode(dir)
	require.True(t, done, "the run's end is recorded")
	assert.ErrorIs(t, syscall.Kill(escaped, 0), syscall.ESRCH, "the setsid child is gone (killed and reaped)")
}

// An orphan that ends under the supervisor while the CLI runs (its
// subreaper is its parent now) is reaped then, not left a zombie until
// the run ends.
func TestAnOrphanThatEndsWhileTheCLIRunsIsReaped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("child subreapers are Linux's")
	}
	pidFile := filepath.Join(t.TempDir(), "orphan.pid")
	dir := launch(t, []string{"sh", "-c", `(sleep 0.2 & echo $! > "$0"); sleep 300`, pidFile}, nil)
	t.Cleanup(func() { Terminate(dir, time.Second) })
	var orphan int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		orphan, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", orphan))
		return os.IsNotExist(err)
	}, 3*zombieReapInterval, 50*time.Millisecond, "the orphan was reaped (a zombie keeps its /proc entry)")
	assert.True(t, Running(dir), "the CLI runs on")
}

// docs/security.md: spool files are 0600 in 0700 folders, whatever the
// umask: every file a run leaves (its prompt, argv, output, error output,
// exit status) is readable by its owner alone.
func TestEverySpoolFileIsTheOwnersAlone(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := launch(t, []string{"sh", "-c", `cat; echo err >&2; exit 3`}, []byte("a prompt"))
	waitFor(t, "the exit status", func() bool { _, ok := ExitCode(dir); return ok })
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the run's folder")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s", e.Name())
	}
}
