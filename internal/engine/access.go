package engine

import (
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/rpc/encryption"

	"github.com/durawait/durawait/internal/enginecreds"
)

// engineTLS gives the Temporal server the data dir's certificates on every
// listener and to every client inside the server. Who reaches the engine
// (docs/security.md, "The engine is a boundary too"): the internal
// services (history, matching, worker) accept only clients that present
// the data dir's client certificate; the frontend accepts a client
// certificate signed by the data dir's authority, or a request carrying
// the Web UI's bearer token (engineClaims); the frontend's HTTP API is not
// served.
type engineTLS struct {
	frontendServer, internodeServer, client *tls.Config
}

var _ encryption.TLSConfigProvider = (*engineTLS)(nil)

// newEngineTLS reads the data dir's credentials into the server's TLS
// configurations.
func newEngineTLS(files enginecreds.Files) (*engineTLS, error) {
	frontend, err := files.ServerTLS(tls.VerifyClientCertIfGiven)
	if err != nil {
		return nil, fmt.Errorf("the frontend's TLS: %w", err)
	}
	internode, err := files.ServerTLS(tls.RequireAndVerifyClientCert)
	if err != nil {
		return nil, fmt.Errorf("the internal services' TLS: %w", err)
	}
	client, err := files.ClientTLS()
	if err != nil {
		return nil, fmt.Errorf("the engine's own clients' TLS: %w", err)
	}
	return &engineTLS{frontendServer: frontend, internodeServer: internode, client: client}, nil
}

// GetInternodeServerConfig is the internal services' listeners': mutual TLS.
func (e *engineTLS) GetInternodeServerConfig() (*tls.Config, error) { return e.internodeServer, nil }

// GetInternodeClientConfig is the server's own clients of its internal
// services: they present the client certificate.
func (e *engineTLS) GetInternodeClientConfig() (*tls.Config, error) { return e.client, nil }

// GetFrontendServerConfig is the frontend's listener: a client certificate
// is checked when given.
func (e *engineTLS) GetFrontendServerConfig() (*tls.Config, error) { return e.frontendServer, nil }

// GetFrontendClientConfig is the server's own clients of its frontend (its
// system workers): they present the client certificate.
func (e *engineTLS) GetFrontendClientConfig() (*tls.Config, error) { return e.client, nil }

// GetRemoteClusterClientConfig is nil: the embedded engine has no remote
// cluster.
func (e *engineTLS) GetRemoteClusterClientConfig(string) (*tls.Config, error) { return nil, nil }

// GetExpiringCerts reports none: certificates are made again at a start
// when they end within 30 days (enginecreds.Ensure).
func (e *engineTLS) GetExpiringCerts(time.Duration) (encryption.CertExpirationMap, encryption.CertExpirationMap, error) {
	return nil, nil, nil
}

// engineClaims maps a frontend request to the claims the default
// authorizer checks: system admin for a client certificate the data dir's
// authority signed; writer (every namespace's workflows, no operator
// changes such as search attributes or namespaces) for the Web UI's bearer
// token; none (denied) for anything else.
type engineClaims struct {
	// uiBearer is the Authorization header value of the Web UI's
	// requests ("Bearer " and a secret made at the engine's start, never
	// written anywhere); empty when no UI runs.
	uiBearer string
}

var _ authorization.ClaimMapper = engineClaims{}

// GetClaims implements authorization.ClaimMapper.
func (m engineClaims) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	if info.TLSConnection != nil && len(info.TLSConnection.State.VerifiedChains) > 0 && info.TLSSubject != nil {
		return &authorization.Claims{Subject: info.TLSSubject.CommonName, System: authorization.RoleAdmin}, nil
	}
	if m.uiBearer != "" && subtle.ConstantTimeCompare([]byte(info.AuthToken), []byte(m.uiBearer)) == 1 {
		return &authorization.Claims{Subject: "durawait-web-ui", System: authorization.RoleWriter}, nil
	}
	return nil, nil
}

// access is who may reach the engine: its TLS on every listener and the
// frontend's claims.
type access struct {
	tls    *engineTLS
	claims engineClaims
}

// newAccess reads the data dir's credentials and, with a UI, makes the
// UI's bearer token.
func newAccess(files enginecreds.Files, ui bool) (*access, error) {
	t, err := newEngineTLS(files)
	if err != nil {
		return nil, err
	}
	a := &access{tls: t}
	if ui {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
		a.claims.uiBearer = "Bearer " + hex.EncodeToString(secret)
	}
	return a, nil
}
