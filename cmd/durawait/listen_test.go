package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a reader at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAnAddressReleasedWithinTheWindowIsTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := held.Addr().String()
	var log lockedBuffer
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		ln, err := listenReleased(context.Background(), addr, time.Minute, slog.New(slog.NewTextHandler(&log, nil)))
		done <- result{ln, err}
	}()
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "the HTTP address is in use") }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, held.Close())
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, addr, r.ln.Addr().String())
	require.NoError(t, r.ln.Close())
}

func TestAnAddressHeldPastTheWindowIsAnError(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()
	_, err = listenReleased(context.Background(), held.Addr().String(), 100*time.Millisecond, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
	assert.Contains(t, err.Error(), "still in use after 100ms: another process listens there")
}

func TestAnotherListenErrorIsNotRetried(t *testing.T) {
	_, err := listenReleased(context.Background(), "127.0.0.1:notaport", time.Minute, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "still in use")
}
