package engine

import (
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/rpc/encryption"

	"github.com/durawait/durawait/internal/enginecreds"
)

// Who reaches the engine (docs/security.md, "The engine"): every listener
// speaks TLS with the data dir's server certificate. The internal services
// (history, matching, worker) accept only clients that present the data
// dir's client certificate. The frontend accepts a client certificate
// signed by the data dir's authority, or a request carrying the Web UI's
// bearer token (the UI's gate adds it to the requests of a person logged in
// with its link: internal/webui); anything else is denied by the
// authorizer. The frontend's HTTP API is not served.

// engineTLS gives the Temporal server the data dir's certificates on every
// listener and to every client inside the server.
type engineTLS struct {
	frontendServer, internodeServer, client *tls.Config
}

var _ encryption.TLSConfigProvider = (*engineTLS)(nil)

// newEngineTLS reads the data dir's credentials into the server's TLS
// configurations.
func newEngineTLS(files enginecreds.Files) (*engineTLS, error) {
	frontend, err := files.ServerTLS(tls.VerifyClientCertIfGiven)
	if err != nil {
		return nil, err
	}
	internode, err := files.ServerTLS(tls.RequireAndVerifyClientCert)
	if err != nil {
		return nil, err
	}
	client, err := files.ClientTLS()
	if err != nil {
		return nil, err
	}
	return &engineTLS{frontendServer: frontend, internodeServer: internode, client: client}, nil
}

func (e *engineTLS) GetInternodeServerConfig() (*tls.Config, error) { return e.internodeServer, nil }
func (e *engineTLS) GetInternodeClientConfig() (*tls.Config, error) { return e.client, nil }
func (e *engineTLS) GetFrontendServerConfig() (*tls.Config, error)  { return e.frontendServer, nil }
func (e *engineTLS) GetFrontendClientConfig() (*tls.Config, error)  { return e.client, nil }

// GetRemoteClusterClientConfig: the embedded engine has no remote cluster.
func (e *engineTLS) GetRemoteClusterClientConfig(string) (*tls.Config, error) { return nil, nil }

// GetExpiringCerts: certificates are made again at a start when they end
// within 30 days (enginecreds.Ensure).
func (e *engineTLS) GetExpiringCerts(time.Duration) (encryption.CertExpirationMap, encryption.CertExpirationMap, error) {
	return nil, nil, nil
}

// engineClaims maps a frontend request to the claims the default
// authorizer checks: system admin for a client certificate the data dir's
// authority signed, or for the Web UI's bearer token; none (denied) for
// anything else.
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
		return &authorization.Claims{Subject: "durawait-web-ui", System: authorization.RoleAdmin}, nil
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
