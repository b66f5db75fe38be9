package tmuxwatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Hub shares tmux control clients among pane watches: one client per tmux
// server and session, attached while at least one watch follows a pane of
// that session, however many watches there are.
//
// Sharing is what keeps a tmux server alive through durawait's crashes:
// every control client dies with durawait, and tmux 3.3a's server
// segfaults when many control clients die at once (docs/tmux.md). It also
// spares the host one tmux process per wait.
type Hub struct {
	mu      sync.Mutex
	clients map[sessionKey]*controlClient
	// gates bound the tmux commands in flight to each server (by socket):
	// see Server.
	gates   map[string]chan struct{}
	closed  bool
	leaving sync.WaitGroup // clients detaching in the background
	buffer  int            // events a follower may fall behind: followerBuffer
}

// sessionKey names one session of one tmux server.
type sessionKey struct {
	socket  string
	session string // the session's ID, like $3
}

// NewHub returns a Hub with no clients yet.
func NewHub() *Hub {
	return &Hub{clients: make(map[sessionKey]*controlClient), gates: make(map[string]chan struct{}), buffer: followerBuffer}
}

// commandsPerServer is how many tmux commands (each a client of the tmux
// server for its moment: list-panes, capture-pane) a Hub's watches run at
// once against one server. A kill -9 of durawait takes the commands in
// flight with it, and tmux 3.3a's server segfaults when many of its
// clients die at once (docs/tmux.md): a restarted worker resuming a
// hundred pane watches at once ran a hundred, and the crash soak's tmux
// server died at the 80th kill. A command takes milliseconds, so a few
// lanes serve hundreds of watches.
const commandsPerServer = 4

// Server is the tmux server on socket, its commands bounded by this hub
// (commandsPerServer), shared by every watch of the hub.
func (h *Hub) Server(socket string) Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	gate, ok := h.gates[socket]
	if !ok {
		gate = make(chan struct{}, commandsPerServer)
		h.gates[socket] = gate
	}
	return Server{Socket: socket, gate: gate}
}

// errHubClosed is returned by Follow after Close.
var errHubClosed = errors.New("tmux watches are shutting down")

// Follow follows paneID's output through the control client of its
// session, attaching one if none is. It returns once the client is
// attached, so output printed from then on is seen.
func (h *Hub) Follow(ctx context.Context, srv Server, paneID string) (*Follower, error) {
	session, err := srv.sessionOf(ctx, paneID)
	if err != nil {
		return nil, err
	}
	key := sessionKey{socket: srv.Socket, session: session}
	// A client that ends or is released between attaching and taking
	// this follower is replaced by a new one.
	for tries := 0; ; tries++ {
		f, err := h.follow(ctx, srv, key, paneID)
		if f != nil || err != nil {
			return f, err
		}
		if tries == 2 {
			return nil, fmt.Errorf("the tmux control clients of session %s kept ending while %s was being followed; the watch starts again", session, paneID)
		}
	}
}

// follow takes a follower of paneID from key's client, attaching one if
// none is; it returns neither follower nor error when the client ended
// before it could take one.
func (h *Hub) follow(ctx context.Context, srv Server, key sessionKey, paneID string) (*Follower, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errHubClosed
	}
	c := h.clients[key]
	if c == nil {
		var err error
		c, err = srv.startControlClient(key, h.forget)
		if err != nil {
			h.mu.Unlock()
			return nil, err
		}
		h.clients[key] = c
	}
	c.pending++
	h.mu.Unlock()

	var waitErr error
	select {
	case <-c.ready:
		waitErr = c.attachErr
	case <-ctx.Done():
		waitErr = ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c.pending--
	if waitErr != nil {
		h.detachIfIdle(c)
		return nil, waitErr
	}
	return c.subscribe(h, paneID), nil
}

// detachIfIdle detaches c when no follower has it and no Follow waits for
// it (say a Follow cancelled while its client attached); called with h.mu
// held.
func (h *Hub) detachIfIdle(c *controlClient) {
	if c.pending > 0 || !c.release() {
		return
	}
	h.detach(c)
}

// forget drops c once its process has ended, so the next watch of its
// session attaches a new client.
func (h *Hub) forget(c *controlClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients[c.key] == c {
		delete(h.clients, c.key)
	}
}

// release takes f off its client (Follower.Close, or a follower that fell
// behind), detaching the client when f was its last, unless a Follow is
// waiting for that client to attach. It reports whether f was still there.
func (h *Hub) release(f *Follower) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !f.client.unsubscribe(f) {
		return false
	}
	h.detachIfIdle(f.client)
	return true
}

// detach forgets c and detaches it in the background; called with h.mu
// held. After Close, Close detaches the clients it found.
func (h *Hub) detach(c *controlClient) {
	if h.closed {
		return
	}
	if h.clients[c.key] == c {
		delete(h.clients, c.key)
	}
	h.leaving.Add(1)
	go func() {
		defer h.leaving.Done()
		c.detach()
	}()
}

// Close detaches every client and waits until they have left. Follow fails
// afterwards.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	clients := h.clients
	h.clients = make(map[sessionKey]*controlClient)
	for _, c := range clients {
		h.leaving.Add(1)
		go func(c *controlClient) {
			defer h.leaving.Done()
			c.detach()
		}(c)
	}
	h.mu.Unlock()
	h.leaving.Wait()
}

// sessionOf returns the ID of the session paneID belongs to.
func (s Server) sessionOf(ctx context.Context, paneID string) (string, error) {
	out, err := s.run(ctx, "display-message", "-p", "-t", paneID, "#{session_id}")
	if err != nil {
		return "", fmt.Errorf("find the session of pane %s: %w", paneID, err)
	}
	id := strings.TrimSpace(out)
	if !strings.HasPrefix(id, "$") {
		return "", fmt.Errorf("find the session of pane %s: tmux answered %q", paneID, id)
	}
	return id, nil
}
