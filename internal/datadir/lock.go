// Package datadir guards a durawait data dir so that one process owns it:
// two processes must never open the same SQLite database.
package datadir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Owner describes the process that holds a data dir.
type Owner struct {
	PID    int    `json:"pid"`
	HTTP   string `json:"http,omitempty"`
	Engine string `json:"engine,omitempty"`
	UI     string `json:"ui,omitempty"`
	// Namespace is the Temporal namespace the owner's waits run in
	// (`durawait waits` uses it unless told another).
	Namespace string `json:"namespace,omitempty"`
	// Log is the log file of a background daemon; empty when the owner
	// logs to its stderr.
	Log string `json:"log,omitempty"`
	// Config is the owner's config file (absolute); empty when it runs
	// on defaults and flags.
	Config string `json:"config,omitempty"`
	// Args are the owner's command-line arguments (its flags).
	Args []string `json:"args,omitempty"`
	// Settings are the owner's effective configuration, by key
	// (config.Config.Settings): what a stdio session compares with it.
	Settings  map[string]json.RawMessage `json:"settings,omitempty"`
	StartedAt time.Time                  `json:"started_at"`
}

// InUseError says which process holds the data dir.
type InUseError struct {
	Dir   string
	Owner Owner
	// Stop is the command that stops the owner; empty: durawait stop
	// --data-dir with Dir.
	Stop string
}

func (e *InUseError) Error() string {
	what := "another durawait process"
	if e.Owner.Log != "" {
		what = "the background daemon of stdio sessions"
	}
	msg := fmt.Sprintf("data dir %s is in use by %s (pid %d", e.Dir, what, e.Owner.PID)
	if e.Owner.Config != "" {
		msg += ", config " + e.Owner.Config
	}
	if e.Owner.HTTP != "" {
		msg += ", MCP at " + e.Owner.HTTP
	}
	if e.Owner.Engine != "" {
		msg += ", Temporal engine at " + e.Owner.Engine
	}
	msg += ", started " + e.Owner.StartedAt.Format(time.RFC3339) + ")"
	stop := e.Stop
	if stop == "" {
		stop = "durawait stop --data-dir '" + strings.ReplaceAll(e.Dir, "'", `'\''`) + "'"
	}
	msg += "; stop it with `" + stop + "` (its waits resume when durawait starts again)"
	if e.Owner.Engine != "" {
		msg += fmt.Sprintf(", or add a worker and front end to it with --temporal %s, or use another --data-dir", e.Owner.Engine)
	}
	return msg
}

// CheckFree fails with an *InUseError when a live process holds dir: a
// process that will take dir checks before it listens, so that its
// refusal comes before it logs that it serves.
//
// An owner that is gone but whose lock the kernel has not let go of yet
// (killed, its files still closing, or a zombie not yet reaped) is waited
// for, up to releaseWait: a process restarted at once after a kill -9
// must not be refused by its own predecessor.
func CheckFree(dir string) error {
	deadline := time.Now().Add(releaseWait)
	for {
		owner, held, err := Inspect(dir)
		if err != nil || !held {
			return err
		}
		if !gone(owner.PID) || time.Now().After(deadline) {
			return &InUseError{Dir: dir, Owner: owner}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// releaseWait bounds how long CheckFree waits for a gone owner's lock.
const releaseWait = 5 * time.Second

// gone reports whether process pid has ended: it does not exist, or it is
// a zombie (Linux: /proc/<pid>/stat), whose files the kernel is closing
// or has closed.
func gone(pid int) bool {
	if pid <= 0 {
		return false // the owner has not written its record yet
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// Lock is a held data dir.
type Lock struct {
	file *os.File
}

// Acquire takes dir for this process, creating it if needed and making it
// private (0700, see MakePrivate). The lock is an
// flock: the kernel releases it when the process dies, even on kill -9.
func Acquire(dir string, owner Owner) (*Lock, error) {
	if err := MakePrivate(dir); err != nil {
		return nil, err
	}
	path := LockPath(dir)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	_ = f.Chmod(0o600) // it may predate private data dirs
	if err := lockExclusive(f); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var other Owner
			_ = json.NewDecoder(f).Decode(&other)
			return nil, &InUseError{Dir: dir, Owner: other}
		}
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	l := &Lock{file: f}
	if err := l.Update(owner); err != nil {
		l.Release()
		return nil, err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		register(abs)
	}
	return l, nil
}

// Update rewrites the owner record, e.g. once the listen addresses are known.
func (l *Lock) Update(owner Owner) error {
	b, err := json.Marshal(owner)
	if err != nil {
		return err
	}
	if err := l.file.Truncate(0); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	if _, err := l.file.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	return nil
}

// Release gives the data dir up.
func (l *Lock) Release() {
	_ = syscall.Flock(int(l.file.Fd()), syscall.LOCK_UN)
	_ = l.file.Close()
}

// inspectGrace is how long Acquire retries a lock that is busy: Inspect
// (durawait status, a stdio session looking for the daemon) holds a shared
// lock for an instant, which must not make the owner-to-be give up.
const inspectGrace = 250 * time.Millisecond

// lockExclusive takes f's exclusive flock, retrying a busy one for
// inspectGrace.
func lockExclusive(f *os.File) error {
	deadline := time.Now().Add(inspectGrace)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
