package datadir

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInspectSeesTheOwnerOnlyWhileItHoldsTheLock(t *testing.T) {
	dir := t.TempDir()
	_, held, err := Inspect(dir)
	require.NoError(t, err)
	assert.False(t, held, "no lock file: nobody owns it")

	lock, err := Acquire(dir, Owner{PID: 4242, HTTP: "http://127.0.0.1:1/mcp"})
	require.NoError(t, err)
	o, held, err := Inspect(dir)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 4242, o.PID)
	assert.Equal(t, "http://127.0.0.1:1/mcp", o.HTTP)

	// Inspect must not disturb the owner or block the next owner.
	lock.Release()
	_, held, err = Inspect(dir)
	require.NoError(t, err)
	assert.False(t, held, "a released lock leaves a record but no owner")
	again, err := Acquire(dir, Owner{PID: 1})
	require.NoError(t, err)
	again.Release()
}

func TestSpawnLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	release, err := SpawnLock(t.Context(), dir)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = SpawnLock(ctx, dir)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a second taker waits while the first holds it")

	release()
	release2, err := SpawnLock(t.Context(), dir)
	require.NoError(t, err, "taken again once released")
	release2()
}
