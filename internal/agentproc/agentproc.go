// Package agentproc runs agent CLIs detached from durawait, so that a CLI
// keeps running when durawait dies (even on kill -9) and a restarted durawait
// can find it again.
//
// Each run has a spool folder. A small supervisor process (durawait's hidden
// `agent-supervise` command) starts in its own session, starts the CLI in its
// own process group with its output spooled to files, waits for it, and
// records its exit status:
//
//	<dir>/argv            the CLI's argument vector (JSON): never on the
//	                      supervisor's own command line, where every local
//	                      user could read the prompt in it (ps)
//	<dir>/prompt          the prompt, when the CLI reads it on stdin
//	<dir>/stdout          the CLI's output, as it is written
//	<dir>/stderr          its error output
//	<dir>/stdout.cut      where the output was cut to its cap, if it was
//	                      (outputcap.go); stderr.cut likewise
//	<dir>/supervisor.pid  the supervisor's pid and start time, written by the
//	                      supervisor itself, once: its claim on the run
//	<dir>/cli.pgid        the CLI's process group and its leader's start time
//
// A pid is recorded with its process's start time (Linux: /proc/<pid>/stat)
// because pids are reused: after a container restart or a reboot, the pid
// of a supervisor that is gone may belong to another process, which must
// neither count as the run nor be signalled. Where the start time cannot be
// read (other systems) the pid alone is trusted.
//
//	<dir>/exit            its exit status, written atomically once it ended
package agentproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// File names in a spool folder.
const (
	ArgvFile       = "argv"
	PromptFile     = "prompt"
	StdoutFile     = "stdout"
	StderrFile     = "stderr"
	SupervisorFile = "supervisor.pid"
	PgidFile       = "cli.pgid"
	ExitFile       = "exit"
	// StopFile marks a run stopped (Terminate): once its CLI ended, the
	// supervisor kills what the CLI left behind outside its process group.
	StopFile = "stop"
)

// Launch describes one CLI run.
type Launch struct {
	// Dir is the run's spool folder; it is created.
	Dir string
	// Argv is the CLI and its arguments; no shell is involved.
	Argv []string
	Cwd  string
	// Env is the supervisor's and the CLI's whole environment (durawait's
	// own is not passed on: see internal/childenv); nil passes durawait's.
	Env []string
	// Stdin, when not nil, is written to the prompt file and fed to the CLI.
	Stdin []byte
	// Supervisor is the command that runs Supervise, e.g.
	// [durawait agent-supervise].
	Supervisor []string
	// MaxOutput caps the bytes each output file holds (at least
	// MinOutputCap; 0: uncapped): past it the supervisor cuts the middle.
	MaxOutput int64
}

// Start launches the supervisor detached, and returns once the run's
// supervisor has recorded its pid. A folder's CLI runs at most once: a
// supervisor claims the run by recording its own pid before it starts the
// CLI (Supervise), so a second launch in the same folder (its launcher
// killed before it saw the record, and the launch made again) finds the
// run claimed and leaves it to the first.
func Start(l Launch) error {
	if len(l.Argv) == 0 || l.Argv[0] == "" {
		return errors.New("agentproc: empty command")
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("agentproc: create spool folder: %w", err)
	}
	args := append([]string{}, l.Supervisor[1:]...)
	args = append(args, "--dir", l.Dir, "--cwd", l.Cwd)
	if l.MaxOutput > 0 {
		args = append(args, "--max-output", strconv.FormatInt(max(l.MaxOutput, MinOutputCap), 10))
	}
	if l.Stdin != nil {
		if err := os.WriteFile(filepath.Join(l.Dir, PromptFile), l.Stdin, 0o600); err != nil {
			return fmt.Errorf("agentproc: write prompt: %w", err)
		}
		args = append(args, "--stdin", filepath.Join(l.Dir, PromptFile))
	}
	argv, err := json.Marshal(l.Argv)
	if err != nil {
		return fmt.Errorf("agentproc: encode the command: %w", err)
	}
	if err := os.WriteFile(filepath.Join(l.Dir, ArgvFile), argv, 0o600); err != nil {
		return fmt.Errorf("agentproc: write the command: %w", err)
	}
	cmd := exec.Command(l.Supervisor[0], args...)
	cmd.Env = l.Env
	// What the supervisor says before it runs the CLI (a command it
	// cannot read) goes where the CLI's error output goes.
	if errOut, err := os.OpenFile(filepath.Join(l.Dir, StderrFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		defer errOut.Close()
		cmd.Stderr = errOut
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("agentproc: start supervisor: %w", err)
	}
	// The supervisor is not our child for long: release it so it is never
	// a zombie of ours, and let it live on without us.
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.NewTimer(claimWait)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !Started(l.Dir) {
		select {
		case <-exited:
			if Started(l.Dir) {
				return nil
			}
			return errors.New("agentproc: the supervisor exited before it claimed the run (its error output is in the spool folder)")
		case <-deadline.C:
			return fmt.Errorf("agentproc: the supervisor did not claim the run within %s", claimWait)
		case <-tick.C:
		}
	}
	return nil
}

// zombieReapInterval is how often a supervisor reaps the orphans that
// ended under it while its CLI runs (Linux: sweep_linux.go).
const zombieReapInterval = 5 * time.Second

// claimWait bounds how long Start waits for the supervisor's claim.
const claimWait = 30 * time.Second

// ReadArgv reads the CLI's argument vector that Start wrote in dir.
func ReadArgv(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ArgvFile))
	if err != nil {
		return nil, err
	}
	var argv []string
	if err := json.Unmarshal(b, &argv); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ArgvFile), err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: an empty command", filepath.Join(dir, ArgvFile))
	}
	return argv, nil
}

// Supervision is what a supervisor is asked to run (the flags of
// `durawait agent-supervise`).
type Supervision struct {
	// Dir is the run's spool folder.
	Dir string
	// Cwd is the CLI's working directory.
	Cwd string
	// Stdin, when not empty, is the file fed to the CLI.
	Stdin string
	// MaxOutput caps each output file (0: uncapped; see Launch).
	MaxOutput int64
	// Argv is the CLI and its arguments.
	Argv []string
}

// Supervise runs in the supervisor process: it starts the CLI in its own
// process group with output spooled to the run's folder, caps that
// output, waits for the CLI, and records its exit status. It returns the
// status.
//
// It first claims the run: it records its own pid in the folder, which
// fails when a supervisor already did; then it returns 0 at once, touching
// nothing (the run is the other's).
func Supervise(s Supervision) int {
	dir, cwd, stdinPath, argv := s.Dir, s.Cwd, s.Stdin, s.Argv
	claimed, err := writeOnce(filepath.Join(dir, SupervisorFile), processRecord(os.Getpid()))
	if err != nil && Started(dir) {
		return 127 // the run is another supervisor's: leave its folder alone
	}
	if err != nil {
		return recordExit(dir, 127, err)
	}
	if !claimed {
		return 0
	}
	subreaper := becomeSubreaper()
	stdout, err := os.OpenFile(filepath.Join(dir, StdoutFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return recordExit(dir, 127, err)
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(filepath.Join(dir, StderrFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return recordExit(dir, 127, err)
	}
	defer stderr.Close()
	if subreaper != nil {
		// A sandbox that denies it: the run goes on, and a stopped run's
		// processes outside the CLI's group may outlive it.
		fmt.Fprintf(stderr, "durawait supervisor: cannot become the reaper of the CLI's processes (%v): a cancel stops only the CLI's process group\n", subreaper)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if stdinPath != "" {
		in, err := os.Open(stdinPath)
		if err != nil {
			return recordExit(dir, 127, err)
		}
		defer in.Close()
		cmd.Stdin = in
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "durawait: cannot start %s: %v\n", argv[0], err)
		return recordExit(dir, 127, nil)
	}
	_ = writeAtomic(filepath.Join(dir, PgidFile), processRecord(cmd.Process.Pid))
	code := 0
	stopReaping := make(chan struct{})
	if subreaper == nil {
		go reapZombies(cmd.Process.Pid, stopReaping)
	}
	capped := make(chan struct{})
	if s.MaxOutput > 0 {
		limit := max(s.MaxOutput, MinOutputCap)
		caps := []*outputCap{{path: stdout.Name(), limit: limit}, {path: stderr.Name(), limit: limit}}
		go func() { capOutput(caps, stderr, stopReaping); close(capped) }()
	} else {
		close(capped)
	}
	err = cmd.Wait()
	close(stopReaping)
	<-capped
	if _, stopErr := os.Stat(filepath.Join(dir, StopFile)); stopErr == nil && subreaper == nil {
		// A stopped run leaves nothing behind: not even a process that
		// left the CLI's group (setsid) and so missed Terminate's signals.
		sweepDescendants()
	}
	if err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return recordExit(dir, 127, err)
		}
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	return recordExit(dir, code, nil)
}

func recordExit(dir string, code int, err error) int {
	if err != nil {
		if f, ferr := os.OpenFile(filepath.Join(dir, StderrFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); ferr == nil {
			fmt.Fprintf(f, "durawait supervisor: %v\n", err)
			f.Close()
		}
	}
	_ = writeAtomic(filepath.Join(dir, ExitFile), strconv.Itoa(code))
	return code
}

// Started reports whether a run was ever launched in dir.
func Started(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, SupervisorFile))
	return err == nil
}

// ExitCode returns the CLI's exit status once it has ended.
func ExitCode(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, ExitFile))
	if err != nil {
		return 0, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false
	}
	return code, true
}

// Running reports whether the run's supervisor is still alive.
func Running(dir string) bool {
	pid, ok := readProcess(filepath.Join(dir, SupervisorFile))
	if !ok {
		return false
	}
	// Signal 0 checks that the process exists; a zombie counts as gone.
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// Lost reports whether the run in dir lost its supervisor: it has none
// alive and no exit status (the machine, or someone, killed it).
func Lost(dir string) bool {
	_, exited := ExitCode(dir)
	return !exited && !Running(dir)
}

// LockSpool takes an exclusive lock on the spool root folder (the parent
// of the runs' folders), shared with every process of the machine, for an
// act on a run that must not be made twice at once (resuming a lost run);
// unlock releases it.
func LockSpool(root string) (unlock func(), err error) {
	f, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("agentproc: open the spool folder to lock it: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("agentproc: lock the spool folder: %w", err)
	}
	return func() { f.Close() }, nil
}

// Terminate stops the CLI's whole process group: SIGTERM, then SIGKILL if
// it has not ended after grace; the supervisor then kills whatever the CLI
// left outside its group (StopFile). It returns once the exit status is recorded
// or the supervisor is gone. A group whose recorded leader is now another
// process (its pid reused) is not signalled.
func Terminate(dir string, grace time.Duration) {
	pgid, ok := readProcess(filepath.Join(dir, PgidFile))
	if !ok {
		return
	}
	_ = writeAtomic(filepath.Join(dir, StopFile), "stopped")
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitExit(dir, grace) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitExit(dir, 5*time.Second)
}

func waitExit(dir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, done := ExitCode(dir); done {
			return true
		}
		if !Running(dir) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// processRecord is the line recording process pid: its pid and, where it
// can be read, its start time.
func processRecord(pid int) string {
	if start, ok := startTime(pid); ok {
		return strconv.Itoa(pid) + " " + start
	}
	return strconv.Itoa(pid)
}

// readProcess reads a process record and returns its pid when it still
// names the same process: ok is false when the file is missing or
// malformed, or when the pid now belongs to a process that started at
// another time. A record of an earlier release (a pid alone) is trusted.
func readProcess(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 || len(fields) > 2 {
		return 0, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	if len(fields) == 2 {
		if now, ok := startTime(pid); ok && now != fields[1] {
			return 0, false
		}
	}
	return pid, true
}

// startTime is process pid's start time in clock ticks since boot (field
// 22 of /proc/<pid>/stat), which tells a process from a later one that
// reuses its pid; ok is false where there is no /proc or no such process.
func startTime(pid int) (string, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after its last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return "", false
	}
	fields := strings.Fields(string(stat[i+1:]))
	const startTimeField = 22 - 3 // fields 3 onwards
	if len(fields) <= startTimeField {
		return "", false
	}
	return fields[startTimeField], true
}

// writeOnce writes content to path, whole, unless path exists: false then.
func writeOnce(path, content string) (bool, error) {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return false, fmt.Errorf("agentproc: write %s: %w", filepath.Base(path), err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("agentproc: write %s: %w", filepath.Base(path), err)
	}
	return true, nil
}

func writeAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return fmt.Errorf("agentproc: write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("agentproc: write %s: %w", filepath.Base(path), err)
	}
	return nil
}
