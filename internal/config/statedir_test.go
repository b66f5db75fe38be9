package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestStateDirPrefersXDGStateHome(t *testing.T) {
	dir, err := StateDir(env(map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}))
	require.NoError(t, err)
	assert.Equal(t, "/x/state/durawait", dir)
}

func TestStateDirFallsBackToHome(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"unset":    {"HOME": "/home/u"},
		"relative": {"XDG_STATE_HOME": "state", "HOME": "/home/u"},
	} {
		dir, err := StateDir(env(vars))
		require.NoError(t, err, name)
		assert.Equal(t, "/home/u/.local/state/durawait", dir, name)
	}
}

func TestStateDirNeedsSomewhere(t *testing.T) {
	_, err := StateDir(env(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "set data_dir")
}
