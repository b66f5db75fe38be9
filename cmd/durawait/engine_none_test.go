//go:build noengine

package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A build without the embedded engine refuses serve's engine step, naming
// what to do instead, and says what it is in its version.
func TestABuildWithoutTheEngineRefusesToServeOne(t *testing.T) {
	p := newProcess(roles{engine: true, worker: true, front: true}, stepConfig(t, "--engine-port", "0", "--no-ui"), io.Discard)
	require.NoError(t, p.checkRoles("serve"))
	stop, err := p.startEngine(context.Background())
	require.ErrorIs(t, err, errNoEngine)
	assert.Nil(t, stop)
	assert.Contains(t, err.Error(), "--temporal HOST:PORT")

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"version"}, nil, &out, io.Discard))
	assert.Contains(t, out.String(), "no embedded engine")
}
