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
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"time"
)

// TokenParam is the login link's query parameter.
const TokenParam = "durawait_token"

// cookiePrefix begins the session cookie's name, which ends with the UI's
// port: a browser sends cookies to every port of a host, so two durawaits'
// UIs on one machine keep their sessions apart.
const cookiePrefix = "durawait_ui_"

// upstreamCookies are the UI's own cookies, the only ones the gate passes
// on (a browser sends the gate every cookie of the host name, other local
// applications' too).
var upstreamCookies = []string{"_csrf"}

// Options configure a Gate.
type Options struct {
	// Upstream is the UI server's base URL (http://127.0.0.1:PORT).
	Upstream string
	// Authorization is the Authorization header value the engine accepts
	// from the UI; the gate sets it on every request it forwards.
	Authorization string
	// UpstreamTLS is the TLS configuration of the gate's connections to
	// Upstream (an https URL); nil for plain HTTP.
	UpstreamTLS *tls.Config
	// Logger receives the gate's errors.
	Logger *slog.Logger
}

// Gate is the UI's port: an HTTP server that checks each request and
// forwards the ones it lets through.
type Gate struct {
	token, session string
	// cookie is the session cookie's name (cookiePrefix and the port).
	cookie string
	proxy  *httputil.ReverseProxy
	server *http.Server
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
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	g := &Gate{token: secret(), session: secret(), cookie: cookiePrefix + port}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = opts.UpstreamTLS
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
			r.Out.Header.Set("Authorization", opts.Authorization)
			keepOnly(r.Out, upstreamCookies)
			// Headers the UI's server turns into gRPC metadata for the
			// engine: only the gate speaks to the engine.
			r.Out.Header.Del("Authorization-Extras")
			for name := range r.Out.Header {
				if strings.HasPrefix(strings.ToLower(name), "grpc-") {
					r.Out.Header.Del(name)
				}
			}
		},
		Transport: transport,
		ErrorLog:  slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
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
		http.Error(w, fmt.Sprintf("Host %q is not allowed: the Web UI answers only requests addressed to localhost or a loopback IP", r.Host), http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
		http.Error(w, fmt.Sprintf("Origin %q is not allowed: the Web UI answers only its own pages", origin), http.StatusForbidden)
		return
	}
	// A request that changes something must say it comes from the UI's
	// own page (its Origin, checked above, or Sec-Fetch-Site): the UI's
	// server skips its own CSRF check on requests with an Authorization
	// header, which the gate adds to every request.
	if unsafeMethod(r.Method) && r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		http.Error(w, "a "+r.Method+" to the Web UI must come from its own page (an Origin or Sec-Fetch-Site: same-origin header)", http.StatusForbidden)
		return
	}
	if token := r.URL.Query().Get(TokenParam); token != "" {
		g.login(w, r, token)
		return
	}
	if c, err := r.Cookie(g.cookie); err != nil || !equal(c.Value, g.session) {
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
	http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: g.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del(TokenParam)
	// The same page without the token, always a path of this host (a
	// request for //evil.example/ must not send the browser there).
	next := "/" + strings.TrimLeft(r.URL.EscapedPath(), "/")
	if len(q) > 0 {
		next += "?" + q.Encode()
	}
	// A page, not a redirect: a link opened from another site's page is a
	// cross-site navigation, and a browser may send no SameSite=Strict
	// cookie on a redirect that continues it; the page's own navigation
	// is same-site. The token stays out of referrers and caches.
	h := w.Header()
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><meta http-equiv=\"refresh\" content=\"0; url=%s\"><title>durawait</title><a href=\"%s\">Open the Temporal Web UI</a>\n",
		html.EscapeString(next), html.EscapeString(next))
}

// unsafeMethod reports whether an HTTP method may change something.
func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// loopbackHost reports whether a Host header names the loopback interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" {
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

// keepOnly keeps only the named cookies in a request's Cookie headers.
func keepOnly(r *http.Request, names []string) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if slices.Contains(names, c.Name) {
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
