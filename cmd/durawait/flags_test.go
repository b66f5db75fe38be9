package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/config"
)

// configFrom is the configuration the flags args of serve make (the
// configuration's flags only).
func configFrom(args []string) (config.Config, error) {
	fs := flag.NewFlagSet("durawait serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := registerConfigFlags(fs)
	if err := fs.Parse(args); err != nil {
		return config.Config{}, err
	}
	return flags.load()
}

func TestFlagsOverrideTheConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "durawait.toml")
	require.NoError(t, os.WriteFile(path, []byte("http = \"127.0.0.1:1111\"\nnamespace = \"from-file\"\nui_port = 9999\n"), 0o644))

	cfg, err := configFrom([]string{"--config", path, "--http", "127.0.0.1:2222", "--ui-port", "0"})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:2222", cfg.HTTP, "a flag wins over the file")
	assert.Equal(t, 0, cfg.UIPort, "a flag wins even when it sets the zero value")
	assert.True(t, cfg.UI, "ui_port 0 is any free port, not no UI")
	cfg, err = configFrom([]string{"--config", path, "--no-ui"})
	require.NoError(t, err)
	assert.False(t, cfg.UI, "--no-ui runs no UI")
	assert.Equal(t, "from-file", cfg.Namespace, "the file wins over a default")
	assert.Equal(t, "durawait", cfg.TaskQueue, "defaults fill the rest")
}

func TestFlagsAloneWithoutAFile(t *testing.T) {
	cfg, err := configFrom([]string{"--stdio", "--data-dir", "/tmp/x", "--temporal", "host:7233", "--namespace", "n", "--task-queue", "q", "--log-level", "debug", "--engine-port", "0"})
	require.NoError(t, err)
	assert.True(t, cfg.Stdio)
	assert.Equal(t, "/tmp/x", cfg.DataDir)
	assert.Equal(t, "host:7233", cfg.Temporal)
	assert.Equal(t, "n", cfg.Namespace)
	assert.Equal(t, "q", cfg.TaskQueue)
	assert.Equal(t, "debug", cfg.LogLevel)
	assert.Equal(t, 0, cfg.EnginePort)
}

func TestBadFlagValuesAreNamed(t *testing.T) {
	_, err := configFrom([]string{"--log-level", "chatty"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `log_level: must be debug, info, warn or error, got "chatty"`)

	_, err = configFrom([]string{"--config", "/does/not/exist.toml"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/does/not/exist.toml")
}

func TestWorkerAndFrontNeedATemporalAddress(t *testing.T) {
	for _, cmd := range []string{"worker", "front"} {
		err := run(t.Context(), []string{cmd}, nil, io.Discard, io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "durawait "+cmd+" needs a Temporal cluster: --temporal HOST:PORT")
	}
}
