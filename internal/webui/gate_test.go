package webui

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// upstream stands in for the UI's server: it echoes the Authorization and
// Cookie headers it was given.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "path="+r.URL.Path+" authorization="+r.Header.Get("Authorization")+" cookie="+r.Header.Get("Cookie"))
	}))
	t.Cleanup(s.Close)
	return s
}

func serveGate(t *testing.T) (*Gate, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g, err := Serve(ln, Options{Upstream: upstream(t).URL, Authorization: "Bearer engine-secret"})
	require.NoError(t, err)
	t.Cleanup(g.Close)
	return g, "http://" + ln.Addr().String()
}

func get(t *testing.T, hc *http.Client, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		if k == "Host" {
			// The client looks cookies up by the Host it sends: a
			// browser keeps them by the address it was given.
			req.Host = v
			if hc.Jar != nil {
				for _, c := range hc.Jar.Cookies(req.URL) {
					req.AddCookie(c)
				}
			}
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Without the login link nothing reaches the UI; the link sets an
// HttpOnly, SameSite=Strict session cookie and sends the browser on
// without the token; with the cookie, requests reach the UI's server
// with the engine's bearer token instead of anything the browser sent.
func TestGateLetsThroughOnlyTheLoginLinksHolder(t *testing.T) {
	g, base := serveGate(t)
	code, body := get(t, http.DefaultClient, base+"/api/v1/namespaces/default/workflows", nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, "durawait status")

	code, _ = get(t, http.DefaultClient, base+"/?"+TokenParam+"=not-the-token", nil)
	assert.Equal(t, http.StatusUnauthorized, code, "a wrong token")

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(g.LoginURL(base) + "&x=1")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/?x=1", resp.Header.Get("Location"), "the token leaves the address bar")
	require.Len(t, resp.Cookies(), 1)
	c := resp.Cookies()[0]
	assert.Equal(t, CookieName, c.Name)
	assert.True(t, c.HttpOnly, "no script reads the session")
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	code, _ = get(t, browser, g.LoginURL(base), nil)
	require.Equal(t, http.StatusOK, code)
	code, body = get(t, browser, base+"/api/v1/x", map[string]string{"Authorization": "Bearer forged"})
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "path=/api/v1/x authorization=Bearer engine-secret ")
	assert.NotContains(t, body, CookieName, "the session stays with the gate")
}

// Requests addressed to another name (a DNS-rebound page) or sent by
// another origin, even on the same machine, are refused before the login
// is looked at.
func TestGateRefusesOtherHostsAndOrigins(t *testing.T) {
	g, base := serveGate(t)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	code, _ := get(t, browser, g.LoginURL(base), nil)
	require.Equal(t, http.StatusOK, code)
	port := base[strings.LastIndex(base, ":")+1:]

	for name, header := range map[string]map[string]string{
		"Host evil.example":               {"Host": "evil.example:" + port},
		"Host evil.example with the link": {"Host": "evil.example"},
		"Origin evil.example":             {"Origin": "http://evil.example"},
		"Origin on another local port":    {"Origin": "http://127.0.0.1:1"},
		"Origin null":                     {"Origin": "null"},
		"Origin https of the same host":   {"Origin": "https://" + strings.TrimPrefix(base, "http://")},
	} {
		url := base + "/api/v1/x"
		if strings.HasSuffix(name, "with the link") {
			url = g.LoginURL(base)
		}
		code, body := get(t, browser, url, header)
		assert.Equal(t, http.StatusForbidden, code, name)
		assert.NotContains(t, body, "engine-secret", name)
	}
	for name, header := range map[string]map[string]string{
		"no Origin":       nil,
		"its own Origin":  {"Origin": base},
		"Host localhost":  {"Host": "localhost:" + port},
		"Host [::1]":      {"Host": "[::1]:" + port},
		"Origin as typed": {"Origin": "http://localhost:" + port, "Host": "localhost:" + port},
	} {
		code, _ := get(t, browser, base+"/api/v1/x", header)
		assert.Equal(t, http.StatusOK, code, name)
	}
}
