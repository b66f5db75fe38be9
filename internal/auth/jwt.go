package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// JWTOptions configure JWT validation.
type JWTOptions struct {
	// JWKSURL serves the identity provider's signing keys (a JWK set).
	JWKSURL string
	// Issuer must equal the token's iss claim.
	Issuer string
	// Audience must be one of the token's aud claim.
	Audience string
	// Client fetches the keys; nil uses a client with a 10 s timeout.
	Client *http.Client
	// Leeway allows for clock skew in exp, nbf and iat; 0 is one minute.
	Leeway time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// jwksMaxAge is how long fetched keys are used before they are fetched
// again; jwksMinRefetch bounds how often an unknown key ID makes them be
// fetched early (a key rotation).
const (
	jwksMaxAge     = 10 * time.Minute
	jwksMinRefetch = 30 * time.Second
	jwksMaxBytes   = 1 << 20
)

// jwtAlgorithms are the signature algorithms accepted (asymmetric only: a
// JWKS publishes public keys).
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// JWT verifies JSON Web Tokens signed by a key of a JWKS, with the
// configured issuer and audience, an exp claim, and a non-empty sub claim,
// which is the principal. Keys are fetched on first use, again after ten
// minutes, and early (at most every 30 s) when a token names an unknown key.
//
// The key cache is this file's own, on purpose. go-jose (which parses the
// set and checks the tokens here) fetches nothing; golang-jwt/jwt v4 and v5
// are in the module graph but fetch no JWKS either (keyfunc, lestrrat-go/jwx
// and the like are not in it). The one JWKS cache in the graph, go-oidc's
// RemoteKeySet (github.com/coreos/go-oidc/v3, through the Temporal UI
// server), was considered and not used: every token whose key ID it does
// not hold, or whose signature its keys do not verify, makes it fetch the
// set again, with nothing to bound how often (a stream of forged tokens is
// a stream of requests to the identity provider); it never fetches again on
// age, so a key the provider withdrew stays trusted until some token names
// an unknown one; it reads the set without a size bound; and it fetches on
// a goroutine under the context it was built with and an HTTP client passed
// as a context value, which the caller's context does not end. (The
// Temporal server's JWKS provider is the server's internal package, RS256
// and ES256 only, fetched with http.Get and no timeout.) TestJWTKeyCache
// holds what this cache does that those do not.
type JWT struct {
	opts JWTOptions

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
}

// NewJWT checks opts and returns a verifier. It does not fetch the keys.
func NewJWT(opts JWTOptions) (*JWT, error) {
	var errs []error
	if !strings.HasPrefix(opts.JWKSURL, "https://") && !strings.HasPrefix(opts.JWKSURL, "http://") {
		errs = append(errs, fmt.Errorf("auth.jwks_url: must be an http(s) URL, got %q", opts.JWKSURL))
	}
	if opts.Issuer == "" {
		errs = append(errs, errors.New("auth.issuer: must be set with auth.jwks_url"))
	}
	if opts.Audience == "" {
		errs = append(errs, errors.New("auth.audience: must be set with auth.jwks_url"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Leeway == 0 {
		opts.Leeway = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &JWT{opts: opts}, nil
}

// Verify implements Verifier.
func (j *JWT) Verify(ctx context.Context, token string) (string, error) {
	if strings.Count(token, ".") != 2 {
		return "", errUnknownToken()
	}
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil {
		return "", invalid("malformed JWT: %v", err)
	}
	kid := tok.Headers[0].KeyID
	key, err := j.key(ctx, kid)
	if err != nil {
		return "", err
	}
	var claims jwt.Claims
	if err := tok.Claims(key, &claims); err != nil {
		return "", invalid("bad signature: %v", err)
	}
	if claims.Expiry == nil {
		return "", invalid("the token has no exp claim")
	}
	err = claims.ValidateWithLeeway(jwt.Expected{
		Issuer:      j.opts.Issuer,
		AnyAudience: jwt.Audience{j.opts.Audience},
		Time:        j.opts.Now(),
	}, j.opts.Leeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return "", invalid("issuer is not %q", j.opts.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return "", invalid("audience does not include %q", j.opts.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return "", invalid("the token expired")
	case err != nil:
		return "", invalid("%v", err)
	}
	if claims.Subject == "" {
		return "", invalid("the token has no sub claim")
	}
	if why := reservedPrincipal(claims.Subject); why != "" {
		return "", invalid("the token's sub claim: %s", why)
	}
	return claims.Subject, nil
}

// key finds the public key named kid (or the only key, when the token names
// none), fetching the key set when needed.
func (j *JWT) key(ctx context.Context, kid string) (any, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.opts.Now()
	stale := j.fetched.IsZero() || now.Sub(j.fetched) > jwksMaxAge
	if !stale {
		if k, ok := pick(j.keys, kid); ok {
			return k, nil
		}
		stale = now.Sub(j.fetched) > jwksMinRefetch
	}
	if stale {
		keys, err := j.fetch(ctx)
		if err != nil {
			if j.fetched.IsZero() {
				return nil, err
			}
			// Keep using the keys fetched before.
		} else {
			j.keys, j.fetched = keys, now
		}
	}
	if k, ok := pick(j.keys, kid); ok {
		return k, nil
	}
	return nil, invalid("no key %q in the JWKS", kid)
}

func pick(set jose.JSONWebKeySet, kid string) (any, bool) {
	var candidates []jose.JSONWebKey
	if kid != "" {
		candidates = set.Key(kid)
	} else {
		candidates = set.Keys
	}
	if len(candidates) != 1 || !candidates[0].Valid() {
		return nil, false
	}
	k := candidates[0]
	if k.Use != "" && k.Use != "sig" {
		return nil, false
	}
	return k.Public().Key, true
}

func (j *JWT) fetch(ctx context.Context) (jose.JSONWebKeySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.opts.JWKSURL, nil)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("auth.jwks_url: %w", err)
	}
	resp, err := j.opts.Client.Do(req)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("fetch the JWKS from %s: %w", j.opts.JWKSURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return jose.JSONWebKeySet{}, fmt.Errorf("fetch the JWKS from %s: HTTP %s", j.opts.JWKSURL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes))
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("fetch the JWKS from %s: %w", j.opts.JWKSURL, err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("the JWKS at %s does not parse: %w", j.opts.JWKSURL, err)
	}
	return set, nil
}
