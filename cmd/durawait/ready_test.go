package main

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/readiness"
	"github.com/durawait/durawait/mcpfront"
)

// An HTTP front end is ready only once /mcp is routed: a front end whose
// authentication does not set up never says ready, on /readyz or /healthz.
func TestAFrontIsReadyOnlyOnceMCPIsRouted(t *testing.T) {
	p := &process{
		cfg:    config.Config{TaskQueue: "q", Auth: config.Auth{TokensFile: filepath.Join(t.TempDir(), "missing.toml")}},
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		health: &healthState{},
		ready:  &readiness.Handler{},
		front:  mcpfront.New(mcpfront.Options{TaskQueue: "q"}),
	}
	require.Error(t, p.serve(t.Context(), nil, nil), "the tokens file does not load")
	assert.Equal(t, "starting", p.ready.Report(t.Context()).Status, "no checks before /mcp is routed")
	assert.False(t, p.health.ready.Load())
}
