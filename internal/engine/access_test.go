package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/authorization"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/durawait/durawait/internal/enginecreds"
)

// Every listener of the engine refuses a client without the data dir's
// certificate, or a browser without the UI's login: the frontend over
// plain gRPC, over TLS without a certificate (it answers only the health
// check and GetSystemInfo) and with the certificate of another data dir;
// the internal services without a certificate; the UI's gate without its
// login; the UI's own server (behind the gate) for lack of the gate's
// bearer token. With the data dir's certificate, the frontend serves.
func TestEveryEngineListenerRefusesAClientWithoutTheDataDirsCredentials(t *testing.T) {
	uiPort, err := freePort("127.0.0.1")
	require.NoError(t, err)
	e, err := Start(Options{DataDir: t.TempDir(), Namespace: "default", UIPort: uiPort,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError})
	require.NoError(t, err)
	defer e.Stop()
	stranger, err := enginecreds.Ensure(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	strangerTLS, err := stranger.ClientTLS()
	require.NoError(t, err)
	strangerTLS.RootCAs = e.ClientTLS().RootCAs // it trusts the engine, and presents its own data dir's certificate
	noCert := &tls.Config{RootCAs: e.ClientTLS().RootCAs, MinVersion: tls.VersionTLS12}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := map[string]bool{}
	for _, l := range e.Listeners() {
		names[l.Name] = true
		switch l.Name {
		case "frontend":
			list := func(creds credentials.TransportCredentials) error {
				conn, err := grpc.NewClient(l.Addr, grpc.WithTransportCredentials(creds))
				require.NoError(t, err)
				defer conn.Close()
				_, err = workflowservice.NewWorkflowServiceClient(conn).ListWorkflowExecutions(ctx,
					&workflowservice.ListWorkflowExecutionsRequest{Namespace: "default"})
				return err
			}
			assert.Error(t, list(insecure.NewCredentials()), "plain gRPC")
			err := list(credentials.NewTLS(noCert))
			assert.Equal(t, codes.PermissionDenied, status.Code(err), "TLS without a certificate: %v", err)
			assert.Error(t, list(credentials.NewTLS(strangerTLS)), "another data dir's certificate")
			assert.NoError(t, list(credentials.NewTLS(e.ClientTLS())), "the data dir's certificate")
		case "history", "matching", "worker":
			assert.Error(t, tlsHandshake(l.Addr, noCert), "%s without a certificate", l.Name)
			assert.Error(t, tlsHandshake(l.Addr, strangerTLS), "%s with another data dir's certificate", l.Name)
			assert.NoError(t, tlsHandshake(l.Addr, e.ClientTLS()), "%s with the data dir's certificate", l.Name)
		case "ui":
			resp, err := http.Get("http://" + l.Addr + "/api/v1/namespaces/default/workflows")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the UI without its login")
		case "ui-server":
			// An intruder trusts any certificate; the server asks for none.
			anyServer := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the intruder's
			resp, err := anyServer.Get("https://" + l.Addr + "/api/v1/namespaces/default/workflows")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.NotEqual(t, http.StatusOK, resp.StatusCode, "the UI's server without the gate's token")
			assert.Contains(t, string(body), "Request unauthorized")
		default:
			t.Errorf("listener %s (%s) has no check here", l.Name, l.Addr)
		}
	}
	assert.Equal(t, map[string]bool{"frontend": true, "history": true, "matching": true, "worker": true, "ui": true, "ui-server": true}, names)
	assert.Equal(t, "127.0.0.1:"+strconv.Itoa(uiPort), e.UIAddr())
	assert.True(t, strings.HasPrefix(e.UILoginURL(), "http://"+e.UIAddr()+"/?durawait_token="), e.UILoginURL())
}

// tlsHandshake completes a TLS handshake with addr and reads until the
// server's verdict on the client's certificate (TLS 1.3 sends it after the
// handshake): a refusal is an error; a server that speaks (HTTP/2's
// settings) or waits is not.
func tlsHandshake(addr string, conf *tls.Config) error {
	conf = conf.Clone()
	conf.NextProtos = []string{"h2"} // a gRPC server closes a connection without it
	c, err := tls.Dial("tcp", addr, conf)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	var timeout net.Error
	if errors.As(err, &timeout) && timeout.Timeout() {
		return nil
	}
	return err
}

// The claims: admin for a verified client certificate; writer for the
// UI's bearer token, exactly; nothing for a wrong token, a token when no
// UI runs, or a certificate the handshake did not verify.
func TestEngineClaimsGrantOnlyTheDataDirsCredentials(t *testing.T) {
	verified := &credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}}
	unverified := &credentials.TLSInfo{State: tls.ConnectionState{}}
	subject := &pkix.Name{CommonName: "durawait"}
	ui := engineClaims{uiBearer: "Bearer right"}
	for _, tc := range []struct {
		name   string
		claims engineClaims
		info   authorization.AuthInfo
		want   authorization.Role
	}{
		{"a verified certificate", ui, authorization.AuthInfo{TLSConnection: verified, TLSSubject: subject}, authorization.RoleAdmin},
		{"the UI's token", ui, authorization.AuthInfo{AuthToken: "Bearer right"}, authorization.RoleWriter},
		{"a wrong token", ui, authorization.AuthInfo{AuthToken: "Bearer wrong"}, 0},
		{"the token without its scheme", ui, authorization.AuthInfo{AuthToken: "right"}, 0},
		{"a token when no UI runs", engineClaims{}, authorization.AuthInfo{AuthToken: "Bearer "}, 0},
		{"an empty token when no UI runs", engineClaims{}, authorization.AuthInfo{AuthToken: ""}, 0},
		{"an unverified certificate", ui, authorization.AuthInfo{TLSConnection: unverified, TLSSubject: subject}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims, err := tc.claims.GetClaims(&tc.info)
			require.NoError(t, err)
			if tc.want == 0 {
				assert.Nil(t, claims)
				return
			}
			require.NotNil(t, claims)
			assert.Equal(t, tc.want, claims.System)
		})
	}
}

// systemInfo answers GetSystemInfo, as any Temporal frontend does.
type systemInfo struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (systemInfo) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// A busy port's Temporal frontend is found over plain gRPC and over TLS
// (another durawait's engine), and which of the two is said: the port
// clash's hint then says that TLS needs its credentials.
func TestFindTemporalTellsPlainFromTLS(t *testing.T) {
	files, err := enginecreds.Ensure(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	serverTLS, err := files.ServerTLS(tls.VerifyClientCertIfGiven)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		opts  []grpc.ServerOption
		isTLS bool
	}{
		{"plain gRPC", nil, false},
		{"TLS", []grpc.ServerOption{grpc.Creds(credentials.NewTLS(serverTLS))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			gs := grpc.NewServer(tc.opts...)
			workflowservice.RegisterWorkflowServiceServer(gs, systemInfo{})
			go func() { _ = gs.Serve(ln) }()
			defer gs.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			found, overTLS := findTemporal(ctx, ln.Addr().String())
			assert.True(t, found)
			assert.Equal(t, tc.isTLS, overTLS)
		})
	}
}
