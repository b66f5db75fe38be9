package mcpfront

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// DefaultSessionIdle is how long a 2025-11-25 session that sees no request
// is remembered. After it, or after a restart of durawait, the session ID
// is unknown: its requests get 404 and the client initializes again, as the
// transport specifies (its waits are unaffected: they are keyed by what
// they wait for, not by session).
const DefaultSessionIdle = 12 * time.Hour

// maxSessions bounds how many sessions are remembered at once; beyond it
// the least recently used one is forgotten.
const maxSessions = 100_000

// errUnknownSession is a session ID this front end did not create, or has
// forgotten.
var errUnknownSession = errors.New("unknown session ID: initialize a new session")

// sessionTable is the session ID manager of the HTTP transport (protocol
// 2025-11-25). It remembers the sessions it generated and the ones DELETE
// ended, so an ID it never issued, an ended one or an expired one gets 404.
// It accepts the per-request IDs that httpFront derives from a live
// session's ID (<session>~call-<n>); ending one of those ends nothing.
// Memory is bounded: sessions expire after the idle time, and at most
// maxSessions are kept.
type sessionTable struct {
	idle time.Duration
	now  func() time.Time

	mu        sync.Mutex
	live      map[string]time.Time // last use
	ended     map[string]time.Time // when DELETE ended it
	lastSweep time.Time
}

var _ server.SessionIdManager = (*sessionTable)(nil)

func newSessionTable(idle time.Duration, now func() time.Time) *sessionTable {
	if idle <= 0 {
		idle = DefaultSessionIdle
	}
	return &sessionTable{idle: idle, now: now, live: map[string]time.Time{}, ended: map[string]time.Time{}, lastSweep: now()}
}

// Generate implements server.SessionIdManager.
func (t *sessionTable) Generate() string {
	id := (&server.StatelessGeneratingSessionIdManager{}).Generate()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	if len(t.live) >= maxSessions {
		t.evictOldest()
	}
	t.live[id] = now
	return id
}

// Validate implements server.SessionIdManager.
func (t *sessionTable) Validate(id string) (isTerminated bool, err error) {
	base, _, _ := strings.Cut(id, perCallSuffix)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if _, ok := t.ended[base]; ok {
		return true, nil
	}
	last, ok := t.live[base]
	if !ok || now.Sub(last) > t.idle {
		delete(t.live, base)
		return false, errUnknownSession
	}
	t.live[base] = now
	return false, nil
}

// Terminate implements server.SessionIdManager.
func (t *sessionTable) Terminate(id string) (isNotAllowed bool, err error) {
	if strings.Contains(id, perCallSuffix) {
		return false, nil // one request's session: the client's lives on
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.live[id]; ok {
		delete(t.live, id)
		t.ended[id] = t.now()
	}
	return false, nil
}

// known reports whether id (or the session a per-request ID belongs to) is
// live.
func (t *sessionTable) known(id string) bool {
	terminated, err := t.Validate(id)
	return err == nil && !terminated
}

// sweep forgets expired sessions, at most once per tenth of the idle time.
func (t *sessionTable) sweep(now time.Time) {
	if now.Sub(t.lastSweep) < t.idle/10 {
		return
	}
	t.lastSweep = now
	for id, last := range t.live {
		if now.Sub(last) > t.idle {
			delete(t.live, id)
		}
	}
	for id, at := range t.ended {
		if now.Sub(at) > t.idle {
			delete(t.ended, id)
		}
	}
}

func (t *sessionTable) evictOldest() {
	var oldest string
	var at time.Time
	for id, last := range t.live {
		if oldest == "" || last.Before(at) {
			oldest, at = id, last
		}
	}
	delete(t.live, oldest)
}
