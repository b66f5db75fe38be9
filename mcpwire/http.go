package mcpwire

import (
	"bytes"
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

// NewHTTPHandler serves s over streamable HTTP at path: mcp-go's
// transport, behind a thin layer of durawait's own (see httpHandler).
func NewHTTPHandler(s Served, path string, opts HTTPOptions) http.Handler {
	h := &httpHandler{served: s, admission: NewAdmission(opts), sessions: newSessionTable(opts.SessionIdle, time.Now)}
	h.next = server.NewStreamableHTTPServer(s.MCP,
		server.WithEndpointPath(path),
		server.WithHeartbeatInterval(15*time.Second),
		server.WithSessionIdManagerResolver(h.sessions),
		// The Admission's own Host check (hostAllowed) replaces mcp-go's,
		// so that /mcp and every other route of durawait's follow one rule.
		server.WithDisableLocalhostProtection(true))
	return h
}

// httpHandler sits in front of mcp-go's streamable HTTP server. It does
// three things mcp-go v1.2.1 does not, each small enough to delete once
// mcp-go does it itself:
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
//   - It hands the requests the tools answer themselves (Served.Own: the
//     task methods, which mcp-go keeps in memory only) to them.
//
// It also applies the transport's rules of who may call (Admission: 403,
// 401), sessions that must have been created by initialize and not ended
// by DELETE (404, see sessionTable), and no JSON-RPC batches (400).
type httpHandler struct {
	served    Served
	admission *Admission
	sessions  *sessionTable
	next      http.Handler
	// calls numbers the per-request sessions.
	calls atomic.Uint64
	// exactIDs are the stand-ins of requests in flight whose ids mcp-go
	// would change (exactid.go), by inFlightKey.
	exactIDs exactIDs
	// inFlight maps a session's requests in flight (inFlightKey) to the
	// per-request session each runs on, for notifications/cancelled.
	inFlight sync.Map
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal, ok := h.admission.Admit(w, r)
	if !ok {
		return
	}
	who := Caller{Session: r.Header.Get(server.HeaderKeySessionID), Principal: principal}
	r = r.WithContext(WithCaller(r.Context(), who))
	if r.Method != http.MethodPost {
		h.serveOtherMethods(w, r, who)
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	h.servePost(w, r, who, body)
}

// serveOtherMethods serves what is not a POST: a session's SSE stream (GET)
// and its end (DELETE), which need the caller's own live session unless the
// caller speaks 2026-07-28 (no sessions); mcp-go answers any other method.
func (h *httpHandler) serveOtherMethods(w http.ResponseWriter, r *http.Request, who Caller) {
	if (r.Method == http.MethodGet || r.Method == http.MethodDelete) && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		switch {
		case who.Session == "":
			// A GET without one would make mcp-go mint a session nobody
			// learns.
			http.Error(w, "Mcp-Session-Id header is required: initialize first", http.StatusBadRequest)
			return
		case !h.sessions.view(who.Principal).known(who.Session):
			http.Error(w, "unknown or ended session: initialize a new one", http.StatusNotFound)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// readBody reads a POST's body, at most maxRequestBody bytes (413 past
// it), and leaves it readable again in r.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("request body larger than %d bytes", maxRequestBody), http.StatusRequestEntityTooLarge)
			return nil, false
		}
		http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	setBody(r, body)
	return body, true
}

// setBody makes body the body mcp-go reads of r.
func setBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
}

// servePost routes one POSTed JSON-RPC message: to the wire's own answer,
// the tools' (Served.Own), or mcp-go's.
func (h *httpHandler) servePost(w http.ResponseWriter, r *http.Request, who Caller, body []byte) {
	if isBatch(body) {
		writeJSON(w, http.StatusBadRequest, batchError())
		return
	}
	msg, ok := parseMessage(body)
	if !ok {
		h.next.ServeHTTP(w, r) // mcp-go answers the parse error
		return
	}
	if msg.badID() {
		writeJSON(w, http.StatusBadRequest, badIDError(msg))
		return
	}
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(msg.metaProtocolVersion())
	if h.answeredAhead(w, msg, who, modern) {
		return
	}
	if modern {
		who.LogLevel = msg.metaLogLevel()
	} else if who.Session != "" {
		who.LogLevel = h.sessions.logLevel(who.Session)
	}
	r = r.WithContext(WithCaller(r.Context(), who))
	switch {
	case msg.isRequest():
		h.serveRequest(w, r, who, msg, body, modern)
	case !modern && msg.method == string(mcp.MethodNotificationCancelled):
		h.routeCancel(r, who, msg, body)
		h.next.ServeHTTP(w, r)
	default:
		h.next.ServeHTTP(w, r)
	}
}

// answeredAhead answers, ahead of anyone, a modern notification without a
// _meta protocol version (202, or 400 when malformed) and a 2025-11-25
// message after initialize without its caller's live session (400, 404).
func (h *httpHandler) answeredAhead(w http.ResponseWriter, msg message, who Caller, modern bool) bool {
	switch {
	case modern && msg.isNotification() && msg.metaProtocolVersion() == "":
		if !msg.wellFormedNotification() {
			writeJSON(w, http.StatusBadRequest, ErrorResponse(nil, mcp.INVALID_REQUEST,
				"malformed notification: it needs jsonrpc \"2.0\", a string method, no id, and params (when present) an object"))
			return true
		}
		// Nothing durawait does ends on a notification from the client: a
		// cancelled call's wait runs on to its own bound.
		w.WriteHeader(http.StatusAccepted)
		return true
	case modern || msg.method == "" || msg.method == string(mcp.MethodInitialize):
		return false
	case who.Session == "":
		// 2025-11-25: every message after initialize carries its session.
		http.Error(w, "Mcp-Session-Id header is required: initialize first, then send the session ID it returned", http.StatusBadRequest)
		return true
	case !h.sessions.view(who.Principal).known(who.Session):
		// Before the tools' own answers (tasks, refusals) as before mcp-go's.
		http.Error(w, "unknown or ended session: initialize a new one", http.StatusNotFound)
		return true
	}
	return false
}

// serveRequest serves a request: refused by the UTF-8 guard, answered by
// the tools themselves, or handed to mcp-go with its id kept exact and, on
// a 2025-11-25 session, on a per-request session of its own.
func (h *httpHandler) serveRequest(w http.ResponseWriter, r *http.Request, who Caller, msg message, body []byte, modern bool) {
	if resp, refused := utf8Refusal(msg); refused {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	if !modern && msg.method == string(mcp.MethodSetLogLevel) && who.Session != "" {
		// A session's level, which its requests' own (per-request)
		// sessions in mcp-go would not share.
		writeJSON(w, http.StatusOK, setLevelResponse(msg, func(level mcp.LoggingLevel) { h.sessions.setLogLevel(who.Session, level) }))
		return
	}
	if modern {
		// Before anyone answers: the tools' own answers are checked as
		// mcp-go checks its own, and answered with its statuses.
		if refusal := headerMismatch(r.Header, msg); refusal != nil {
			writeJSON(w, modernStatus(*refusal), refusal)
			return
		}
	}
	if resp, handled := h.served.own(r.Context(), msg, modern); handled {
		status := http.StatusOK
		if modern {
			status = modernStatus(resp)
		}
		writeJSON(w, status, resp)
		return
	}
	plain, changed := forMCPGo(msg, body, modern)
	plain, exact := withExactID(msg, plain)
	if changed || exact != nil {
		setBody(r, plain)
	}
	if exact != nil {
		w = exactIDWriter{ResponseWriter: w, id: exact}
	}
	if msg.method == string(mcp.MethodToolsCall) {
		w, r = withNotificationTally(w, r)
	}
	if who.Session != "" && !modern && msg.method != string(mcp.MethodInitialize) {
		perCall := fmt.Sprintf("%s%s%d", who.Session, perCallSuffix, h.calls.Add(1))
		key := inFlightKey(who.Session, msg.ID)
		h.inFlight.Store(key, perCall)
		defer h.inFlight.CompareAndDelete(key, perCall)
		if exact != nil {
			defer h.exactIDs.remember(key, exact)()
		}
		r.Header.Set(server.HeaderKeySessionID, perCall)
	}
	h.next.ServeHTTP(w, r)
}

// routeCancel sends a 2025-11-25 notifications/cancelled to the
// per-request session the request it names runs on (mcp-go finds the
// request to cancel under its session), naming a request mcp-go knows by a
// stand-in id by the stand-in.
func (h *httpHandler) routeCancel(r *http.Request, who Caller, msg message, body []byte) {
	var params struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if who.Session == "" || json.Unmarshal(msg.Params, &params) != nil {
		return
	}
	if perCall, ok := h.inFlight.Load(inFlightKey(who.Session, params.RequestID)); ok {
		r.Header.Set(server.HeaderKeySessionID, perCall.(string))
	}
	if out := h.exactIDs.cancelFor(body, msg, func(id json.RawMessage) string { return inFlightKey(who.Session, id) }); !bytes.Equal(out, body) {
		setBody(r, out)
	}
}

// inFlightKey names a request in flight on a session by its JSON-RPC id.
func inFlightKey(session string, id json.RawMessage) string {
	return session + " " + string(bytes.TrimSpace(id))
}

// Admission applies the rules of who may call an HTTP route of durawait's
// (/mcp, /events): the Origin check (403), the Host check of a listener
// without authentication (403, see hostAllowed), and authentication (401,
// when configured).
type Admission struct {
	opts    HTTPOptions
	origins map[string]bool
	// originHosts are the host names of the allowed origins, which the
	// Host header may name (see hostAllowed).
	originHosts map[string]bool
}

// NewAdmission is the Admission of opts' Origin, Host and authentication
// rules.
func NewAdmission(opts HTTPOptions) *Admission {
	origins := map[string]bool{}
	hosts := map[string]bool{}
	for _, o := range opts.AllowedOrigins {
		o = strings.ToLower(strings.TrimRight(o, "/"))
		origins[o] = true
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			hosts[u.Hostname()] = true
		}
	}
	return &Admission{opts: opts, origins: origins, originHosts: hosts}
}

// Admit returns the caller's principal ("" for the local user), or answers
// the request itself (403, 401) and returns false.
func (h *Admission) Admit(w http.ResponseWriter, r *http.Request) (principal string, ok bool) {
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
func (h *Admission) hostAllowed(hostport string) bool {
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
func (h *Admission) originAllowed(origin string) bool {
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
