package datadir

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An entry of a durawait that is gone is dropped by the next reader.
func TestTheRegistryForgetsAGoneDurawait(t *testing.T) {
	reg := t.TempDir()
	t.Setenv(RegistryEnv, reg)
	dir := t.TempDir()
	lock, err := Acquire(dir, Owner{PID: os.Getpid(), StartedAt: time.Now()})
	require.NoError(t, err)
	running, err := Running()
	require.NoError(t, err)
	require.Len(t, running, 1)
	lock.Release()
	running, err = Running()
	require.NoError(t, err)
	assert.Empty(t, running)
	entries, err := os.ReadDir(reg)
	require.NoError(t, err)
	assert.Empty(t, entries, "the entry is removed")
}

// A registry folder other users can write (DURAWAIT_REGISTRY_DIR on a
// shared path) lists only this user's durawaits: an entry naming another
// user's data dir, held and running, is neither listed nor removed.
func TestTheRegistryListsOnlyThisUsersDataDirs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a data dir to another user needs root (CI runs as root)")
	}
	reg := t.TempDir()
	t.Setenv(RegistryEnv, reg)
	mine, theirs := t.TempDir(), t.TempDir()
	for _, dir := range []string{mine, theirs} {
		lock, err := Acquire(dir, Owner{PID: os.Getpid(), StartedAt: time.Now()})
		require.NoError(t, err)
		t.Cleanup(lock.Release)
	}
	const nobody = 65534
	require.NoError(t, os.Chown(theirs, nobody, nobody))

	running, err := Running()
	require.NoError(t, err)
	require.Len(t, running, 1)
	assert.Equal(t, mine, running[0].Dir)
	entries, err := os.ReadDir(reg)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "the other user's entry stays")
}
