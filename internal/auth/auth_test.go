package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdef"
)

func writeTokens(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.toml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

const twoTokens = `
[[token]]
principal = "alice"
token = "` + aliceToken + `"

[[token]]
principal = "bob"
token = "` + bobToken + `"
`

func TestTokens(t *testing.T) {
	tokens, err := LoadTokens(writeTokens(t, twoTokens), nil)
	require.NoError(t, err)
	ctx := context.Background()

	p, err := tokens.Verify(ctx, aliceToken)
	require.NoError(t, err)
	assert.Equal(t, "alice", p)
	p, err = tokens.Verify(ctx, bobToken)
	require.NoError(t, err)
	assert.Equal(t, "bob", p)

	for _, wrong := range []string{"", "alice", aliceToken + "x", aliceToken[:len(aliceToken)-1], bobToken + aliceToken} {
		_, err := tokens.Verify(ctx, wrong)
		var bad *InvalidTokenError
		assert.ErrorAs(t, err, &bad, "token %q", wrong)
	}
}

func TestTokensFileRules(t *testing.T) {
	cases := map[string]string{
		"empty principal": "[[token]]\nprincipal = \"\"\ntoken = \"" + aliceToken + "\"\n",
		"short token":     "[[token]]\nprincipal = \"a\"\ntoken = \"short\"\n",
		"duplicate":       twoTokens + "[[token]]\nprincipal = \"carol\"\ntoken = \"" + aliceToken + "\"\n",
		"unknown key":     "[[token]]\nprincipal = \"a\"\ntoken = \"" + aliceToken + "\"\nrole = \"admin\"\n",
		"no tokens":       "# nothing\n",
		"not TOML":        "principal alice\n",
	}
	for name, body := range cases {
		_, err := LoadTokens(writeTokens(t, body), nil)
		assert.ErrorContains(t, err, "auth.tokens_file", name)
	}
	_, err := LoadTokens(filepath.Join(t.TempDir(), "missing.toml"), nil)
	assert.ErrorContains(t, err, "auth.tokens_file")
}

// A tokens file every user may change is refused; one every user may read
// loads, with a warning; group bits pass.
func TestTokensFileMode(t *testing.T) {
	path := writeTokens(t, twoTokens)
	cases := []struct {
		mode    os.FileMode
		refused string
		warning string
	}{
		{0o600, "", ""},
		{0o640, "", ""},
		{0o440, "", ""},
		{0o660, "", ""},
		{0o644, "", "mode 0644 lets every user of the machine read its tokens: chmod 600 it"},
		{0o604, "", "mode 0604 lets every user"},
		{0o666, "mode 0666 lets every user of the machine change it, and so add a token of their own: chmod 600 it", ""},
		{0o602, "mode 0602 lets every user of the machine change it", ""},
	}
	for _, c := range cases {
		require.NoError(t, os.Chmod(path, c.mode))
		tokens, err := LoadTokens(path, nil)
		if c.refused != "" {
			assert.ErrorContains(t, err, "auth.tokens_file "+path+": "+c.refused, "mode %04o", c.mode)
			continue
		}
		require.NoError(t, err, "mode %04o", c.mode)
		if c.warning == "" {
			assert.Empty(t, tokens.Warning(), "mode %04o", c.mode)
		} else {
			assert.Contains(t, tokens.Warning(), c.warning, "mode %04o", c.mode)
		}
	}

	// A reload sees a chmod: the warning goes, and a file made writable by
	// all keeps the tokens read before.
	require.NoError(t, os.Chmod(path, 0o644))
	tokens, err := LoadTokens(path, nil)
	require.NoError(t, err)
	require.NotEmpty(t, tokens.Warning())
	require.NoError(t, os.Chmod(path, 0o600))
	require.NoError(t, tokens.Reload())
	assert.Empty(t, tokens.Warning())
	require.NoError(t, os.Chmod(path, 0o646))
	assert.ErrorContains(t, tokens.Reload(), "lets every user of the machine change it")
	p, err := tokens.Verify(context.Background(), aliceToken)
	require.NoError(t, err)
	assert.Equal(t, "alice", p)
}

// "anonymous" names the local user, so no configured principal may take it.
func TestTheLocalUsersNameIsReserved(t *testing.T) {
	_, err := LoadTokens(writeTokens(t, twoTokens+"[[token]]\nprincipal = \"anonymous\"\ntoken = \"carol-token-0123456789abcdef\"\n"), nil)
	assert.ErrorContains(t, err, `token[2].principal: "anonymous" is reserved: it names the local user`)
	_, err = LoadTokens(writeTokens(t, "[[token]]\nprincipal = \"Anonymous\"\ntoken = \""+aliceToken+"\"\n"), nil)
	assert.NoError(t, err, "only the exact name is the local user's")
}

func TestTokensReload(t *testing.T) {
	path := writeTokens(t, twoTokens)
	var reloadErrs []error
	tokens, err := LoadTokens(path, func(err error) { reloadErrs = append(reloadErrs, err) })
	require.NoError(t, err)

	carol := "carol-token-0123456789abcdef"
	require.NoError(t, os.WriteFile(path, []byte("[[token]]\nprincipal = \"carol\"\ntoken = \""+carol+"\"\n"), 0o600))
	require.NoError(t, tokens.Reload())
	p, err := tokens.Verify(context.Background(), carol)
	require.NoError(t, err)
	assert.Equal(t, "carol", p)
	_, err = tokens.Verify(context.Background(), aliceToken)
	assert.Error(t, err, "a token removed from the file is refused after a reload")

	// A broken file keeps the tokens in force.
	require.NoError(t, os.WriteFile(path, []byte("not toml ["), 0o600))
	assert.Error(t, tokens.Reload())
	_, err = tokens.Verify(context.Background(), carol)
	assert.NoError(t, err)

	// A change is picked up without Reload once the file is looked at again.
	require.NoError(t, os.WriteFile(path, []byte(twoTokens), 0o600))
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(path, future, future))
	tokens.mu.Lock()
	tokens.checked = time.Time{}
	tokens.mu.Unlock()
	p, err = tokens.Verify(context.Background(), bobToken)
	require.NoError(t, err)
	assert.Equal(t, "bob", p)
}

func TestGuard(t *testing.T) {
	tokens, err := LoadTokens(writeTokens(t, twoTokens), nil)
	require.NoError(t, err)
	g := NewGuard(tokens, "durawait")
	cases := []struct {
		name, header string
		ok           bool
		principal    string
		challenge    string
	}{
		{"good", "Bearer " + aliceToken, true, "alice", ""},
		{"lower-case scheme", "bearer " + bobToken, true, "bob", ""},
		{"missing", "", false, "", `Bearer realm="durawait"`},
		{"basic scheme", "Basic YWxpY2U6eA==", false, "", `Bearer realm="durawait"`},
		{"wrong", "Bearer nope-nope-nope-nope-nope", false, "", `Bearer realm="durawait", error="invalid_token", error_description="unknown token"`},
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		w := httptest.NewRecorder()
		p, ok := g.Authenticate(w, r)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.principal, p, c.name)
		if !c.ok {
			assert.Equal(t, http.StatusUnauthorized, w.Code, c.name)
			assert.Equal(t, c.challenge, w.Header().Get("WWW-Authenticate"), c.name)
		}
	}
}

func TestLocalToken(t *testing.T) {
	dir := t.TempDir()
	assert.Equal(t, "", ReadLocalToken(dir))
	local, err := WriteLocalToken(dir)
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(dir, LocalTokenFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	token := ReadLocalToken(dir)
	require.NotEmpty(t, token)

	tokens, err := LoadTokens(writeTokens(t, twoTokens), nil)
	require.NoError(t, err)
	chain := Chain{tokens, local}
	p, err := chain.Verify(context.Background(), token)
	require.NoError(t, err)
	assert.Equal(t, Local, p)
	p, err = chain.Verify(context.Background(), aliceToken)
	require.NoError(t, err)
	assert.Equal(t, "alice", p)
	_, err = chain.Verify(context.Background(), "x"+token)
	assert.EqualError(t, err, "invalid token: unknown token")

	// A JWT's own reason wins over "unknown token".
	p2 := newIDP(t)
	now := time.Now()
	jwtv, err := NewJWT(JWTOptions{JWKSURL: p2.url, Issuer: "i", Audience: "a"})
	require.NoError(t, err)
	expired := sign(t, p2.key, p2.kid, jwt.Claims{Issuer: "i", Audience: jwt.Audience{"a"}, Subject: "s", Expiry: jwt.NewNumericDate(now.Add(-time.Hour))})
	_, err = Chain{tokens, jwtv, local}.Verify(context.Background(), expired)
	assert.EqualError(t, err, "invalid token: the token expired")
	RemoveLocalToken(dir)
	assert.Equal(t, "", ReadLocalToken(dir))
}

// idp is an identity provider: a JWKS served over HTTP, and tokens signed
// with its key.
type idp struct {
	key     *ecdsa.PrivateKey
	kid     string
	url     string
	fetches int
	// status, when set, is the JWKS endpoint's answer instead of the set;
	// body, when set, its body.
	status int
	body   []byte
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	p := &idp{key: key, kid: "k1"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		p.fetches++
		if p.status != 0 {
			w.WriteHeader(p.status)
			return
		}
		if p.body != nil {
			_, _ = w.Write(p.body)
			return
		}
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: string(jose.ES256), Use: "sig"}}}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/jwks.json"
	return p
}

func sign(t *testing.T, key *ecdsa.PrivateKey, kid string, claims jwt.Claims) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	require.NoError(t, err)
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	require.NoError(t, err)
	return s
}

func TestJWT(t *testing.T) {
	p := newIDP(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v, err := NewJWT(JWTOptions{JWKSURL: p.url, Issuer: "https://idp.example", Audience: "durawait", Now: func() time.Time { return now }})
	require.NoError(t, err)
	good := jwt.Claims{
		Issuer: "https://idp.example", Audience: jwt.Audience{"other", "durawait"}, Subject: "user-42",
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now),
	}
	ctx := context.Background()

	principal, err := v.Verify(ctx, sign(t, p.key, p.kid, good))
	require.NoError(t, err)
	assert.Equal(t, "user-42", principal)

	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	with := func(change func(*jwt.Claims)) jwt.Claims {
		c := good
		change(&c)
		return c
	}
	cases := []struct {
		name  string
		token string
		want  string
	}{
		{"wrong issuer", sign(t, p.key, p.kid, with(func(c *jwt.Claims) { c.Issuer = "https://evil.example" })), "issuer"},
		{"wrong audience", sign(t, p.key, p.kid, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"other"} })), "audience"},
		{"expired", sign(t, p.key, p.kid, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Hour)) })), "expired"},
		{"no exp", sign(t, p.key, p.kid, with(func(c *jwt.Claims) { c.Expiry = nil })), "exp"},
		{"no sub", sign(t, p.key, p.kid, with(func(c *jwt.Claims) { c.Subject = "" })), "sub"},
		{"the local user's name as sub", sign(t, p.key, p.kid, with(func(c *jwt.Claims) { c.Subject = LocalName })), `the token's sub claim: "anonymous" is reserved`},
		{"wrong key, same kid", sign(t, otherKey, p.kid, good), "signature"},
		{"unknown kid", sign(t, otherKey, "k2", good), "no key"},
		{"not a JWT", "abc", "unknown token"},
		{"garbage", "a.b.c", "malformed"},
	}
	for _, c := range cases {
		_, err := v.Verify(ctx, c.token)
		var bad *InvalidTokenError
		if assert.ErrorAs(t, err, &bad, c.name) {
			assert.Contains(t, bad.Reason, c.want, c.name)
		}
	}
	// The unknown kid could not make the keys be fetched again right away.
	assert.Equal(t, 1, p.fetches)
}

func TestJWTOptions(t *testing.T) {
	_, err := NewJWT(JWTOptions{JWKSURL: "ftp://x"})
	assert.ErrorContains(t, err, "auth.jwks_url")
	assert.ErrorContains(t, err, "auth.issuer")
	assert.ErrorContains(t, err, "auth.audience")
}

func TestJWTProviderDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	v, err := NewJWT(JWTOptions{JWKSURL: srv.URL, Issuer: "i", Audience: "a"})
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	_, err = v.Verify(context.Background(), sign(t, key, "k", jwt.Claims{Subject: "s"}))
	require.Error(t, err)
	var bad *InvalidTokenError
	assert.False(t, errors.As(err, &bad), "an unreachable JWKS is not the token's fault: %v", err)
	g := NewGuard(v, "durawait")
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer a.b.c")
	w := httptest.NewRecorder()
	_, ok := g.Authenticate(w, r)
	assert.False(t, ok)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
}

// The key cache that go-oidc's RemoteKeySet, the JWKS cache already in the
// module graph, does not have (jwt.go says why it is not used): a token
// naming an unknown key fetches the set again at most every 30 s, a key the
// provider withdrew stops verifying within 10 minutes, a provider that is
// down leaves the keys fetched before in use, and a set over 1 MiB is not
// read whole.
func TestJWTKeyCache(t *testing.T) {
	p := newIDP(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v, err := NewJWT(JWTOptions{JWKSURL: p.url, Issuer: "i", Audience: "a", Now: func() time.Time { return now }})
	require.NoError(t, err)
	claims := func() jwt.Claims {
		return jwt.Claims{Issuer: "i", Audience: jwt.Audience{"a"}, Subject: "s", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	}
	ctx := context.Background()
	verifies := func(key *ecdsa.PrivateKey, kid string) error {
		_, err := v.Verify(ctx, sign(t, key, kid, claims()))
		return err
	}
	oldKey := p.key
	require.NoError(t, verifies(oldKey, "k1"))
	require.Equal(t, 1, p.fetches)

	// The provider rotates to k2. Tokens of k2 are refused until 30 s have
	// passed since the last fetch, however many come; then one fetch finds k2.
	newKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	p.key, p.kid = newKey, "k2"
	for range 20 {
		assert.ErrorContains(t, verifies(newKey, "k2"), `no key "k2"`)
	}
	assert.Equal(t, 1, p.fetches, "unknown keys do not make the set be fetched again within 30 s")
	now = now.Add(31 * time.Second)
	require.NoError(t, verifies(newKey, "k2"))
	assert.Equal(t, 2, p.fetches)

	// k1, withdrawn, is no longer trusted.
	assert.ErrorContains(t, verifies(oldKey, "k1"), `no key "k1"`)

	// A set held 10 minutes is fetched again, so a withdrawn key stops
	// verifying even when no token names an unknown one.
	p.key, p.kid = oldKey, "k1"
	now = now.Add(9 * time.Minute)
	require.NoError(t, verifies(newKey, "k2"))
	assert.Equal(t, 2, p.fetches, "fresh keys are used as they are")
	p.key, p.kid = newKey, "k3" // k2 withdrawn
	now = now.Add(2 * time.Minute)
	assert.ErrorContains(t, verifies(newKey, "k2"), `no key "k2"`)
	assert.Equal(t, 3, p.fetches)

	// A provider that is down leaves the keys fetched before in use.
	require.NoError(t, verifies(newKey, "k3"))
	p.status = http.StatusServiceUnavailable
	now = now.Add(11 * time.Minute)
	require.NoError(t, verifies(newKey, "k3"), "the keys fetched before, kept while the provider is down")
	assert.Equal(t, 4, p.fetches)

	// A set over 1 MiB is read to 1 MiB, and does not parse.
	p.status, p.body = 0, append([]byte(`{"keys":[`), make([]byte, 2<<20)...)
	w, err := NewJWT(JWTOptions{JWKSURL: p.url, Issuer: "i", Audience: "a", Now: func() time.Time { return now }})
	require.NoError(t, err)
	_, err = w.Verify(ctx, sign(t, newKey, "k3", claims()))
	assert.ErrorContains(t, err, "does not parse")
}
