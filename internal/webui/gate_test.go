package webui

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
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
		_, _ = io.WriteString(w, "path="+r.URL.Path+" authorization="+r.Header.Get("Authorization")+" cookie="+r.Header.Get("Cookie")+
			" grpc="+r.Header.Get("Grpc-Metadata-X")+" extras="+r.Header.Get("Authorization-Extras"))
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
	return do(t, hc, http.MethodGet, url, header)
}

func do(t *testing.T, hc *http.Client, method, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
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

	resp, err := http.Get(g.LoginURL(base) + "&x=1")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(page), `content="0; url=/?x=1"`, "the page moves on without the token")
	assert.NotContains(t, string(page), g.token)
	assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Len(t, resp.Cookies(), 1)
	c := resp.Cookies()[0]
	assert.Equal(t, "durawait_ui_"+base[strings.LastIndex(base, ":")+1:], c.Name, "the cookie names the UI's port")
	assert.True(t, c.HttpOnly, "no script reads the session")
	assert.Equal(t, http.SameSiteStrictMode, c.SameSite)

	resp, err = http.Get(base + "//evil.example/?" + TokenParam + "=" + g.token)
	require.NoError(t, err)
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(page), `url=/evil.example/"`, "a path of this host, not another host")

	browser := loggedIn(t, g, base)
	browser.Jar.SetCookies(mustURL(t, base), []*http.Cookie{{Name: "other_app", Value: "its-secret"}, {Name: "_csrf", Value: "c"}})
	code, body = get(t, browser, base+"/api/v1/x", map[string]string{"Authorization": "Bearer forged",
		"Grpc-Metadata-X": "forged", "Authorization-Extras": "forged"})
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "path=/api/v1/x authorization=Bearer engine-secret cookie=_csrf=c grpc= extras=",
		"the engine's token; the UI's own cookie only; no metadata of the browser's")
}

// A request that changes something must come from the UI's own page: an
// Origin (checked) or Sec-Fetch-Site: same-origin; a form posted by
// another site sends neither (or a foreign Origin).
func TestGateRefusesAChangeFromAnotherPage(t *testing.T) {
	g, base := serveGate(t)
	browser := loggedIn(t, g, base)
	code, _ := do(t, browser, http.MethodPost, base+"/api/v1/x", nil)
	assert.Equal(t, http.StatusForbidden, code, "a POST that says nothing of where it comes from")
	code, _ = do(t, browser, http.MethodPost, base+"/api/v1/x", map[string]string{"Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = do(t, browser, http.MethodPost, base+"/api/v1/x", map[string]string{"Origin": base})
	assert.Equal(t, http.StatusOK, code, "the UI's own page")
	code, _ = do(t, browser, http.MethodDelete, base+"/api/v1/x", map[string]string{"Sec-Fetch-Site": "same-origin"})
	assert.Equal(t, http.StatusOK, code)
}

// loggedIn is a browser that opened the gate's login link.
func loggedIn(t *testing.T, g *Gate, base string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	code, _ := get(t, browser, g.LoginURL(base), nil)
	require.Equal(t, http.StatusOK, code)
	return browser
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// Requests addressed to another name (a DNS-rebound page) or sent by
// another origin, even on the same machine, are refused before the login
// is looked at.
func TestGateRefusesOtherHostsAndOrigins(t *testing.T) {
	g, base := serveGate(t)
	browser := loggedIn(t, g, base)
	port := base[strings.LastIndex(base, ":")+1:]

	for name, header := range map[string]map[string]string{
		"Host evil.example":               {"Host": "evil.example:" + port},
		"Host evil.example with the link": {"Host": "evil.example"},
		"Origin evil.example":             {"Origin": "http://evil.example"},
		"Origin on another local port":    {"Origin": "http://127.0.0.1:1"},
		"Origin null":                     {"Origin": "null"},
		"Origin https of the same host":   {"Origin": "https://" + strings.TrimPrefix(base, "http://")},
		"Host x.localhost":                {"Host": "x.localhost:" + port},
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
