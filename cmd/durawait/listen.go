package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"
)

// portReleaseWindow is how long durawait calls again for its HTTP address
// while it is in use (listenReleased).
const portReleaseWindow = 3 * time.Second

// listenReleased listens on addr, trying again for up to window while the
// address is in use. A durawait restarted at once after a crash (a
// supervisor's restart; the crash soak's thousand kill -9s) can find its
// port held for a moment by what the crashed process left: a child it was
// starting keeps a copy of its descriptors, the listener among them, until
// it runs its program. The crash soak saw that in about one restart of
// 600, released within 200 ms. A port still in use after window is
// another server's, and the error says so.
func listenReleased(ctx context.Context, addr string, window time.Duration, logger *slog.Logger) (net.Listener, error) {
	deadline := time.Now().Add(window)
	delay := 25 * time.Millisecond
	for tried := false; ; tried = true {
		ln, err := net.Listen("tcp", addr)
		switch {
		case err == nil:
			return ln, nil
		case !errors.Is(err, syscall.EADDRINUSE):
			return nil, err
		case time.Now().Add(delay).After(deadline):
			return nil, fmt.Errorf("%w (still in use after %s: another process listens there)", err, window)
		case !tried:
			logger.Info("the HTTP address is in use; trying again while a crashed process's sockets are released",
				"http", addr, "for", window)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 400*time.Millisecond)
	}
}
