package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// maxRequestBody bounds one HTTP request body; a larger one is refused with
// 413 before it is read into memory.
const maxRequestBody = 8 << 20

// HTTPOptions configure the HTTP front end's checks of who may call.
type HTTPOptions struct {
	// Loopback says the listener is on a loopback address; then requests
	// from loopback origins (a browser page on localhost) are accepted.
	Loopback bool
	// AllowedOrigins are the further Origin header values accepted, such
	// as "https://app.example.com" (scheme, host and port; case-insensitive).
	AllowedOrigins []string
	// Authenticate, when set, names the caller's principal, or answers the
	// request itself (401) and returns false. Nil: every caller is the
	// local user (no authentication).
	Authenticate func(w http.ResponseWriter, r *http.Request) (principal string, ok bool)
	// SessionIdle is how long an unused session of protocol 2025-11-25 is
	// remembered; 0 is DefaultSessionIdle.
	SessionIdle time.Duration
}

// HTTPHandler serves MCP over streamable HTTP at path, for a loopback
// listener with no authentication; see HTTPHandlerWith.
func (f *Front) HTTPHandler(path string) http.Handler {
	return f.HTTPHandlerWith(path, HTTPOptions{Loopback: true})
}

// HTTPHandlerWith serves MCP over streamable HTTP at path: mcp-go's
// transport, behind a thin layer of durawait's own (see httpFront).
func (f *Front) HTTPHandlerWith(path string, opts HTTPOptions) http.Handler {
	h := newHTTPChecks(f, opts)
	h.sessions = newSessionTable(opts.SessionIdle, time.Now)
	h.next = server.NewStreamableHTTPServer(f.mcp,
		server.WithEndpointPath(path),
		server.WithHeartbeatInterval(15*time.Second),
		server.WithSessionIdManagerResolver(h.sessions),
		// httpFront's own Host check (hostAllowed) replaces mcp-go's, so
		// that /mcp and /events follow one rule.
		server.WithDisableLocalhostProtection(true))
	return h
}

// newHTTPChecks is an httpFront with opts' Origin and Host rules, and no
// MCP transport behind it yet: EventsHandler uses it for its checks alone.
func newHTTPChecks(f *Front, opts HTTPOptions) *httpFront {
	origins := map[string]bool{}
	hosts := map[string]bool{}
	for _, o := range opts.AllowedOrigins {
		o = strings.ToLower(strings.TrimRight(o, "/"))
		origins[o] = true
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			hosts[u.Hostname()] = true
		}
	}
	return &httpFront{f: f, opts: opts, origins: origins, originHosts: hosts}
}

// httpFront sits in front of mcp-go's streamable HTTP server. It does three
// things mcp-go v1.2.1 does not, each small enough to delete once mcp-go
// does it itself:
//
//   - It accepts, with 202, a well-formed notification of protocol
//     2026-07-28 that carries no _meta protocol version. That era's schema
//     makes a notification's _meta optional, but mcp-go validates it as if
//     it were a request and answers 400, and the official Go SDK then fails
//     every later call on its client (it sends notifications/cancelled that
//     way when a call is cut off). A malformed notification stays a 400.
//   - It gives every request of a 2025-11-25 session its own session object
//     in mcp-go, so that a notification sent while handling one request (its
//     progress) is written only to that request's SSE stream. mcp-go
//     otherwise shares one notification channel among all the requests in
//     flight on a session, and any of them may take any notification.
//   - It answers the MCP task methods from Temporal (see tasks.go), since
//     mcp-go keeps tasks in memory only.
//
// It also applies the transport's rules of who may call: the Origin check
// (403), the Host check against DNS rebinding when there is no
// authentication (403, see hostAllowed), authentication (401, when configured), sessions that must have
// been created by initialize and not ended by DELETE (404, see
// sessionTable), and no JSON-RPC batches (400).
type httpFront struct {
	f       *Front
	opts    HTTPOptions
	origins map[string]bool
	// originHosts are the host names of the allowed origins, which the
	// Host header may name (see hostAllowed).
	originHosts map[string]bool
	sessions    *sessionTable
	next        http.Handler
	// calls numbers the per-request sessions.
	calls atomic.Uint64
	// exactIDs are the stand-ins of requests in flight whose ids mcp-go
	// would change (exactid.go), by inFlightKey.
	exactIDs exactIDs
	// inFlight maps a session's requests in flight (inFlightKey) to the
	// per-request session each runs on, for notifications/cancelled.
	inFlight sync.Map
}

func (h *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal, ok := h.admit(w, r)
	if !ok {
		return
	}
	who := caller{session: r.Header.Get(server.HeaderKeySessionID), principal: principal}
	r = r.WithContext(withCaller(r.Context(), who))
	if who.session == "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete) &&
		!mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		// A stream or an end needs the session it belongs to (and a GET
		// without one would make mcp-go mint a session nobody learns).
		http.Error(w, "Mcp-Session-Id header is required: initialize first", http.StatusBadRequest)
		return
	}
	if who.session != "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete) &&
		!mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) && !h.sessions.view(principal).known(who.session) {
		http.Error(w, "unknown or ended session: initialize a new one", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		h.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("request body larger than %d bytes", maxRequestBody), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if isBatch(body) {
		writeJSON(w, http.StatusBadRequest, batchError())
		return
	}
	msg, ok := parseRPC(body)
	if !ok {
		h.next.ServeHTTP(w, r)
		return
	}
	if msg.badID() {
		writeJSON(w, http.StatusBadRequest, badIDError(msg))
		return
	}
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(msg.metaProtocolVersion())

	switch {
	case modern && msg.isNotification() && msg.metaProtocolVersion() == "":
		if !msg.wellFormedNotification() {
			writeJSON(w, http.StatusBadRequest, rpcError(nil, mcp.INVALID_REQUEST,
				"malformed notification: it needs jsonrpc \"2.0\", a string method, no id, and params (when present) an object"))
			return
		}
		// Nothing durawait does ends on a notification from the client: a
		// cancelled call's wait runs on to its own bound.
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.method != "" && !modern && msg.method != string(mcp.MethodInitialize) && r.Header.Get(server.HeaderKeySessionID) == "":
		// 2025-11-25: every message after initialize carries its session.
		http.Error(w, "Mcp-Session-Id header is required: initialize first, then send the session ID it returned", http.StatusBadRequest)
		return
	case msg.method != "" && !modern && msg.method != string(mcp.MethodInitialize) && !h.sessions.view(principal).known(who.session):
		// Before durawait's own answers (tasks, refusals) as before mcp-go's.
		http.Error(w, "unknown or ended session: initialize a new one", http.StatusNotFound)
		return
	case msg.isRequest():
		if resp, refused := utf8Refusal(msg); refused {
			writeJSON(w, http.StatusOK, resp)
			return
		}
		ctx := r.Context()
		if resp, handled := h.f.handleOwn(ctx, msg, modern); handled {
			writeJSON(w, http.StatusOK, resp)
			return
		}
		plain, changed := forMCPGo(msg, body, modern)
		plain, exact := withExactID(msg, plain)
		if changed || exact != nil {
			r.Body = io.NopCloser(bytes.NewReader(plain))
			r.ContentLength = int64(len(plain))
		}
		if exact != nil {
			w = exactIDWriter{ResponseWriter: w, id: exact}
		}
		if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && !modern && msg.method != string(mcp.MethodInitialize) {
			perCall := fmt.Sprintf("%s%s%d", sid, perCallSuffix, h.calls.Add(1))
			key := inFlightKey(sid, msg.ID)
			h.inFlight.Store(key, perCall)
			defer h.inFlight.CompareAndDelete(key, perCall)
			if exact != nil {
				defer h.exactIDs.remember(key, exact)()
			}
			r.Header.Set(server.HeaderKeySessionID, perCall)
		}
		r = r.WithContext(ctx)
	case !modern && msg.method == string(mcp.MethodNotificationCancelled):
		// mcp-go finds the request to cancel under its session: send the
		// cancel to the per-request session the request runs on.
		var params struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		sid := r.Header.Get(server.HeaderKeySessionID)
		if json.Unmarshal(msg.Params, &params) == nil && sid != "" {
			if perCall, ok := h.inFlight.Load(inFlightKey(sid, params.RequestID)); ok {
				r.Header.Set(server.HeaderKeySessionID, perCall.(string))
			}
			// A request mcp-go knows by a stand-in id is cancelled by it.
			if out := h.exactIDs.cancelFor(body, msg, func(id json.RawMessage) string { return inFlightKey(sid, id) }); !bytes.Equal(out, body) {
				r.Body = io.NopCloser(bytes.NewReader(out))
				r.ContentLength = int64(len(out))
			}
		}
	}
	h.next.ServeHTTP(w, r)
}

// inFlightKey names a request in flight on a session by its JSON-RPC id.
func inFlightKey(session string, id json.RawMessage) string {
	return session + " " + string(bytes.TrimSpace(id))
}

// admit applies the rules of who may call, shared by /mcp and /events: the
// Origin check (403), the Host check of a listener without authentication
// (403, see hostAllowed), and authentication (401, when configured). It
// returns the caller's principal ("" for the local user), or answers the
// request itself and returns false.
func (h *httpFront) admit(w http.ResponseWriter, r *http.Request) (principal string, ok bool) {
	if origin := r.Header.Get("Origin"); origin != "" && !h.originAllowed(origin) {
		http.Error(w, fmt.Sprintf("Origin %q is not allowed (allowed: none sent, loopback origins on a loopback listener, and allowed_origins in the config)", origin), http.StatusForbidden)
		return "", false
	}
	if h.opts.Authenticate == nil {
		if !h.hostAllowed(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not allowed: without authentication durawait answers only requests addressed to a loopback name "+
				"(localhost, *.localhost, a loopback IP) or to an allowed_origins host", r.Host), http.StatusForbidden)
			return "", false
		}
		return "", true
	}
	return h.opts.Authenticate(w, r)
}

// hostAllowed applies the Host rule of a listener without authentication,
// against DNS rebinding: a page on evil.example whose name was rebound to
// 127.0.0.1 calls durawait "same-origin", with no Origin header, but its
// Host header still names evil.example. So only a loopback name or an
// allowed origin's host is accepted. An empty Host (HTTP/1.0, which no
// browser sends) is accepted.
func (h *httpFront) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	return isLoopbackHost(host) || h.originHosts[host]
}

// originAllowed applies the Origin rules: an allowlisted origin, or a
// loopback one when the listener is on loopback. "null" (a sandboxed page,
// a file) is never allowed.
func (h *httpFront) originAllowed(origin string) bool {
	o := strings.ToLower(strings.TrimRight(origin, "/"))
	if h.origins[o] {
		return true
	}
	if !h.opts.Loopback || o == "null" {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return isLoopbackHost(u.Hostname())
}

// isLoopbackHost reports whether host (no port) names the loopback interface.
func isLoopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// perCallSuffix joins a session ID and the number of one of its requests.
const perCallSuffix = "~call-"

// caller is who made a request, as far as the transport knows.
type caller struct {
	// session is the MCP session ID of a 2025-11-25 client ("" otherwise).
	session string
	// principal is who the caller authenticated as; "" is the local user
	// (no authentication, or a stdio session).
	principal string
}

type callerKey struct{}

func withCaller(ctx context.Context, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom returns the caller a transport recorded in ctx.
func callerFrom(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// principalFrom is the principal of the caller recorded in ctx.
func principalFrom(ctx context.Context) string { return callerFrom(ctx).principal }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
