// Package auth authenticates the callers of durawait's HTTP front end: bearer
// tokens from a file that maps each token to a principal (see Tokens), JWTs
// checked against an identity provider's JWKS (see JWT), and the local token
// that the stdio bridge of the same user presents (see LocalToken). Guard
// turns a Verifier into the 401 answers of RFC 6750.
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// Local is the principal of the local user: every caller when no
// authentication is configured, a stdio session, and a holder of the data
// dir's local token. Configured principals are never empty.
const Local = ""

// LocalName is how the Local principal is named where a name must be shown
// (the Temporal UI's DurawaitCaller, logs, events): "anonymous". It is
// reserved: no tokens file entry and no JWT subject may claim it, since a
// configured principal of that name would pass for the local user wherever
// principals are compared by name.
const LocalName = "anonymous"

// reservedPrincipal says why principal cannot be a configured principal, or
// "" when it can.
func reservedPrincipal(principal string) string {
	if principal == LocalName {
		return fmt.Sprintf("%q is reserved: it names the local user (authentication off, stdio, the data dir's local token); choose another name", LocalName)
	}
	return ""
}

// ErrNoToken is returned when a request carries no bearer token.
var ErrNoToken = errors.New("no bearer token")

// InvalidTokenError says why a token that was presented is refused.
type InvalidTokenError struct {
	Reason string
	// unknown: the verifier does not recognize the token at all (not one
	// of its tokens, not a JWT), as opposed to a token it rejects.
	unknown bool
}

func (e *InvalidTokenError) Error() string { return "invalid token: " + e.Reason }

func invalid(format string, args ...any) error {
	return &InvalidTokenError{Reason: fmt.Sprintf(format, args...)}
}

// Verifier checks a bearer token and names its principal.
type Verifier interface {
	// Verify returns the token's principal, or an *InvalidTokenError when
	// the token is not accepted (other errors: the check itself failed).
	Verify(ctx context.Context, token string) (principal string, err error)
}

// Chain accepts a token that any of its verifiers accepts, asking them in
// order. A token that none accepts is refused with the most telling reason
// (a JWT's "the token expired" rather than the tokens file's "unknown
// token").
type Chain []Verifier

// Verify implements Verifier.
func (c Chain) Verify(ctx context.Context, token string) (string, error) {
	var best error
	for _, v := range c {
		p, err := v.Verify(ctx, token)
		if err == nil {
			return p, nil
		}
		if best == nil || isUnknown(best) {
			best = err
		}
	}
	if best == nil || isUnknown(best) {
		return "", errUnknownToken()
	}
	return "", best
}

// errUnknownToken is the refusal of a token that no verifier recognizes.
func errUnknownToken() error { return &InvalidTokenError{Reason: "unknown token", unknown: true} }

func isUnknown(err error) bool {
	var bad *InvalidTokenError
	return errors.As(err, &bad) && bad.unknown
}

// Guard authenticates HTTP requests with a Verifier.
type Guard struct {
	verifier Verifier
	realm    string
	// Logger gets why a token could not be checked (an unreachable
	// identity provider); the caller is told no more than that it could
	// not be. Nil discards it.
	Logger *slog.Logger
}

// NewGuard returns a guard that names realm in its challenges.
func NewGuard(v Verifier, realm string) *Guard { return &Guard{verifier: v, realm: realm} }

// Authenticate returns the principal of the request's bearer token. When
// there is none, or it is refused, it writes the 401 answer (with a
// WWW-Authenticate challenge, and error="invalid_token" when a token was
// presented) and returns false.
func (g *Guard) Authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	token, err := BearerToken(r.Header)
	if err == nil {
		var p string
		p, err = g.verifier.Verify(r.Context(), token)
		if err == nil {
			return p, true
		}
	}
	challenge := fmt.Sprintf("Bearer realm=%q", g.realm)
	msg := "authentication required: send Authorization: Bearer <token>"
	var bad *InvalidTokenError
	switch {
	case errors.Is(err, ErrNoToken):
	case errors.As(err, &bad):
		challenge += fmt.Sprintf(`, error="invalid_token", error_description=%q`, bad.Reason)
		msg = "the bearer token was refused: " + bad.Reason
	default:
		// The check itself failed (the identity provider is unreachable):
		// still a refusal, and the client may retry.
		challenge += `, error="invalid_token", error_description="the token could not be checked"`
		msg = "the bearer token could not be checked now; try again"
		if g.Logger != nil {
			g.Logger.Warn("a bearer token could not be checked", "error", err)
		}
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, msg, http.StatusUnauthorized)
	return "", false
}

// BearerToken reads the token of an Authorization: Bearer header.
func BearerToken(h http.Header) (string, error) {
	v := h.Get("Authorization")
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoToken
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", ErrNoToken
	}
	return token, nil
}
