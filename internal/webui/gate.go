// Package webui guards the embedded Temporal Web UI: it serves the UI's
// port and lets through only a browser that opened the UI's login link
// (a token made at each start, as notebook servers do), on a request
// addressed to the machine itself (the Host and Origin checks of the MCP
// port, against DNS rebinding). What it lets through it forwards to the
// UI's own server with the bearer token the engine accepts from the UI
// (internal/engine, access.go).
package webui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

const (
	// TokenParam is the login link's query parameter.
	TokenParam = "durawait_token"
	// CookieName is the session cookie the login link sets.
	CookieName = "durawait_ui"
)

// Options configure a Gate.
type Options struct {
	// Upstream is the UI server's base URL (http://127.0.0.1:PORT).
	Upstream string
	// Authorization is the Authorization header value the engine accepts
	// from the UI; the gate sets it on every request it forwards.
	Authorization string
	// Logger receives the gate's errors.
	Logger *slog.Logger
}

// Gate is the UI's port: an HTTP server that checks each request and
// forwards the ones it lets through.
type Gate struct {
	token, session string
	proxy          *httputil.ReverseProxy
	server         *http.Server
}

// Serve serves the gate on ln until Close.
func Serve(ln net.Listener, opts Options) (*Gate, error) {
	upstream, err := url.Parse(opts.Upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", opts.Upstream, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	g := &Gate{token: secret(), session: secret()}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
			r.Out.Header.Set("Authorization", opts.Authorization)
			// The UI's server knows nothing of the gate's session.
			removeCookie(r.Out, CookieName)
		},
		ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
	g.server = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := g.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("Temporal Web UI's gate stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	return g, nil
}

// Close stops the gate.
func (g *Gate) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = g.server.Shutdown(ctx)
}

// LoginURL is the link that logs a browser in, at base (http://HOST:PORT).
func (g *Gate) LoginURL(base string) string {
	return base + "/?" + TokenParam + "=" + g.token
}

// ServeHTTP checks where a request is addressed and from where (403), then
// its login (401), and forwards it.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackHost(r.Host) {
		http.Error(w, fmt.Sprintf("Host %q is not allowed: the Web UI answers only requests addressed to a loopback name (localhost, a loopback IP)", r.Host), http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
		http.Error(w, fmt.Sprintf("Origin %q is not allowed: the Web UI answers only its own pages", origin), http.StatusForbidden)
		return
	}
	if token := r.URL.Query().Get(TokenParam); token != "" {
		g.login(w, r, token)
		return
	}
	if c, err := r.Cookie(CookieName); err != nil || !equal(c.Value, g.session) {
		http.Error(w, "durawait's Web UI needs its login link: `durawait status` prints it (ui), and durawait's log has it at the start", http.StatusUnauthorized)
		return
	}
	g.proxy.ServeHTTP(w, r)
}

// login checks the login link's token and, when it is right, sets the
// session cookie and sends the browser to the same page without the
// token.
func (g *Gate) login(w http.ResponseWriter, r *http.Request, token string) {
	if !equal(token, g.token) {
		http.Error(w, "this login link is not the Web UI's current one (a link is good until durawait restarts): `durawait status` prints the current one", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: g.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del(TokenParam)
	next := *r.URL
	next.RawQuery = q.Encode()
	// A page reached by a link from elsewhere gets no SameSite=Strict
	// cookie on that navigation: the redirect is same-site, so the next
	// request carries it.
	http.Redirect(w, r, next.RequestURI(), http.StatusSeeOther)
}

// loopbackHost reports whether a Host header names the loopback interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether origin is the UI's own: http, the host and
// port the request is addressed to. A page on another port of the same
// machine is another origin (and, to a browser, the same site: its
// requests would carry the session cookie).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && strings.EqualFold(u.Host, host) && u.Path == ""
}

// removeCookie drops one cookie from a request's Cookie headers.
func removeCookie(r *http.Request, name string) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != name {
			r.AddCookie(c)
		}
	}
}

// equal compares secrets in constant time.
func equal(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// secret is 32 random bytes, hex.
func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
