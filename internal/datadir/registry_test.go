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
