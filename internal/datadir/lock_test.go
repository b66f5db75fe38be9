package datadir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecondAcquireNamesTheOwner(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	// The owner is this test's process: alive, so CheckFree refuses at
	// once (a gone owner's lock is waited for).
	pid := os.Getpid()
	first, err := Acquire(dir, Owner{PID: pid, StartedAt: started})
	require.NoError(t, err)
	require.NoError(t, first.Update(Owner{PID: pid, HTTP: "http://127.0.0.1:8765/mcp", Engine: "127.0.0.1:7233", StartedAt: started}))

	_, err = Acquire(dir, Owner{PID: 1})
	var inUse *InUseError
	require.ErrorAs(t, err, &inUse)
	assert.Equal(t, pid, inUse.Owner.PID)
	assert.Equal(t, "data dir "+dir+" is in use by another durawait process (pid "+strconv.Itoa(pid)+", MCP at http://127.0.0.1:8765/mcp, "+
		"Temporal engine at 127.0.0.1:7233, started 2026-11-29T12:00:00Z); stop it with `durawait stop --data-dir '"+dir+"'` "+
		"(its waits resume when durawait starts again), or add a worker and front end to it with --temporal 127.0.0.1:7233, "+
		"or use another --data-dir", err.Error())
	assert.Equal(t, err.Error(), CheckFree(dir).Error(), "a process that will take dir checks first")

	// A stdio daemon started with a config: named so, and stopped by the
	// command its caller names.
	require.NoError(t, first.Update(Owner{PID: pid, Config: "/p/durawait.toml", Log: LogPath(dir), StartedAt: started}))
	err = CheckFree(dir)
	require.ErrorAs(t, err, &inUse)
	inUse.Stop = "durawait stop --config '/p/durawait.toml'"
	assert.Equal(t, "data dir "+dir+" is in use by the background daemon of stdio sessions (pid "+strconv.Itoa(pid)+", config /p/durawait.toml, "+
		"started 2026-11-29T12:00:00Z); stop it with `durawait stop --config '/p/durawait.toml'` (its waits resume when durawait starts again)",
		err.Error())

	first.Release()
	assert.NoError(t, CheckFree(dir))
	again, err := Acquire(dir, Owner{PID: 2})
	require.NoError(t, err, "released locks can be taken")
	again.Release()
}

// An Inspect that holds its shared lock for an instant does not make the
// owner-to-be give up.
func TestAcquireOutlastsAnInspect(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir, Owner{PID: 1})
	require.NoError(t, err)
	first.Release()

	f, err := os.Open(filepath.Join(dir, "durawait.lock"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB), "an Inspect's shared lock")
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}()
	l, err := Acquire(dir, Owner{PID: 2})
	require.NoError(t, err)
	l.Release()
}

// A data dir whose owner was killed but whose lock is still held for a
// moment (its process not yet reaped) is waited for, not refused: a
// restart right after a kill -9 is not turned away by its predecessor.
func TestCheckFreeWaitsForAKilledOwnersLock(t *testing.T) {
	dir := t.TempDir()
	holder := exec.Command("flock", "--exclusive", "--close", LockPath(dir), "sleep", "30")
	require.NoError(t, os.WriteFile(LockPath(dir), nil, 0o600))
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for {
		if _, held, err := Inspect(dir); err == nil && held {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The record names a pid that is a zombie: a child of ours, killed
	// and not reaped.
	zombie := exec.Command("true")
	require.NoError(t, zombie.Start())
	require.NoError(t, os.WriteFile(LockPath(dir), []byte(fmt.Sprintf(`{"pid":%d}`, zombie.Process.Pid)+"\n"), 0o600))
	for !gone(zombie.Process.Pid) {
		time.Sleep(10 * time.Millisecond)
	}
	released := make(chan error, 1)
	go func() { released <- CheckFree(dir) }()
	time.Sleep(100 * time.Millisecond) // CheckFree is waiting now, or refused already
	select {
	case err := <-released:
		t.Fatalf("CheckFree answered while the gone owner's lock was held: %v", err)
	default:
	}
	require.NoError(t, holder.Process.Kill())
	_ = holder.Wait()
	assert.NoError(t, <-released, "free once the lock is let go")
	_ = zombie.Wait()

	// A live owner is refused at once.
	live := exec.Command("flock", "--exclusive", "--close", LockPath(dir), "sleep", "30")
	require.NoError(t, live.Start())
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	for {
		if _, held, err := Inspect(dir); err == nil && held {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(LockPath(dir), []byte(fmt.Sprintf(`{"pid":%d}`, live.Process.Pid)+"\n"), 0o600))
	start := time.Now()
	var inUse *InUseError
	require.ErrorAs(t, CheckFree(dir), &inUse)
	assert.Less(t, time.Since(start), time.Second, "a live owner is refused at once")
}
