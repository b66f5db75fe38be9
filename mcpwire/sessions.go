package mcpwire

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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

// sessionTable keeps the sessions of the HTTP transport (protocol
// 2025-11-25). It remembers the sessions it generated, with the principal
// that initialized each, and the ones DELETE ended, so an ID it never
// issued, an ended one, an expired one, or another principal's gets 404. It
// accepts the per-request IDs that httpHandler derives from a live session's
// ID (<session>~call-<n>); ending one of those ends nothing. Memory is
// bounded: sessions expire after the idle time, and at most maxSessions are
// kept. mcp-go reaches it through ResolveSessionIdManager, as the
// principal of the request (see sessionView).
type sessionTable struct {
	idle time.Duration
	now  func() time.Time

	mu        sync.Mutex
	live      map[string]sessionEntry
	ended     map[string]time.Time // when DELETE ended it
	lastSweep time.Time
}

type sessionEntry struct {
	last      time.Time
	principal string
	// logLevel is what the session asked for with logging/setLevel.
	logLevel mcp.LoggingLevel
}

var _ server.SessionIdManagerResolver = (*sessionTable)(nil)

func newSessionTable(idle time.Duration, now func() time.Time) *sessionTable {
	if idle <= 0 {
		idle = DefaultSessionIdle
	}
	return &sessionTable{idle: idle, now: now, live: map[string]sessionEntry{}, ended: map[string]time.Time{}, lastSweep: now()}
}

// ResolveSessionIdManager implements server.SessionIdManagerResolver: the
// table as seen by the principal of r (the caller httpHandler recorded). A
// nil request (mcp-go's shutdown) sees every session.
func (t *sessionTable) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return sessionView{t: t, any: true}
	}
	return sessionView{t: t, principal: PrincipalFrom(r.Context())}
}

// view is the table as seen by principal.
func (t *sessionTable) view(principal string) sessionView {
	return sessionView{t: t, principal: principal}
}

// sessionView is the session table as one principal sees it: the sessions
// it initialized (any: all of them).
type sessionView struct {
	t         *sessionTable
	principal string
	any       bool
}

var _ server.SessionIdManager = sessionView{}

// Generate implements server.SessionIdManager.
func (v sessionView) Generate() string {
	id := (&server.StatelessGeneratingSessionIdManager{}).Generate()
	t := v.t
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	if len(t.live) >= maxSessions {
		t.evictOldest()
	}
	t.live[id] = sessionEntry{last: now, principal: v.principal}
	return id
}

// Validate implements server.SessionIdManager.
func (v sessionView) Validate(id string) (isTerminated bool, err error) {
	base, _, _ := strings.Cut(id, perCallSuffix)
	t := v.t
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	e, ok := t.live[base]
	switch {
	case ok && (v.any || e.principal == v.principal) && now.Sub(e.last) <= t.idle:
		e.last = now
		t.live[base] = e
		return false, nil
	case ok && now.Sub(e.last) > t.idle:
		delete(t.live, base)
	}
	if _, ended := t.ended[base]; ended && !ok {
		return true, nil
	}
	return false, errUnknownSession
}

// Terminate implements server.SessionIdManager.
func (v sessionView) Terminate(id string) (isNotAllowed bool, err error) {
	if strings.Contains(id, perCallSuffix) {
		return false, nil // one request's session: the client's lives on
	}
	t := v.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.live[id]; ok && (v.any || e.principal == v.principal) {
		delete(t.live, id)
		t.ended[id] = t.now()
	}
	return false, nil
}

// setLogLevel records a live session's logging/setLevel (id may be one
// of its per-request IDs).
func (t *sessionTable) setLogLevel(id string, level mcp.LoggingLevel) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.live[SessionOf(id)]; ok {
		e.logLevel = level
		t.live[SessionOf(id)] = e
	}
}

// logLevel is the level a session asked for with logging/setLevel ("":
// none, or no such session).
func (t *sessionTable) logLevel(id string) mcp.LoggingLevel {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live[SessionOf(id)].logLevel
}

// known reports whether id (or the session a per-request ID belongs to) is
// live and the principal's.
func (v sessionView) known(id string) bool {
	terminated, err := v.Validate(id)
	return err == nil && !terminated
}

// sweep forgets expired sessions, at most once per tenth of the idle time.
func (t *sessionTable) sweep(now time.Time) {
	if now.Sub(t.lastSweep) < t.idle/10 {
		return
	}
	t.lastSweep = now
	for id, e := range t.live {
		if now.Sub(e.last) > t.idle {
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
	for id, e := range t.live {
		if oldest == "" || e.last.Before(at) {
			oldest, at = id, e.last
		}
	}
	delete(t.live, oldest)
}
