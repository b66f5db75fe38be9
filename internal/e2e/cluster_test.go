package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// clusterNamespace is the namespace the production cluster test creates
// and runs durawait in (not "default": the roles are told which).
const clusterNamespace = "durawait-e2e"

// productionCluster starts PostgreSQL 15, sets up Temporal's schema with
// the server's SQL tool, starts the production temporal-server on it with
// an mTLS frontend and the given number of history shards, and creates the
// namespace. It returns how to reach it, the server and its database.
func productionCluster(t testing.TB, shards int) (temporalTarget, *temporalServer, *postgres) {
	t.Helper()
	serverBin, sqlTool := temporalServerBinaries(t)
	dir := t.TempDir()
	pki := newTestPKI(t, dir+"/pki")
	certs := temporalServerTLS{
		CAFile:       pki.CAFile,
		Server:       pki.serverCert("server"),
		SystemWorker: pki.clientCert("system-worker", "temporal-system-worker"),
	}
	testClient := pki.clientCert("test", "durawait-e2e-test")

	began := time.Now()
	pg := startPostgres(t)
	setUpTemporalSchema(t, sqlTool, pg)
	t.Logf("PostgreSQL and Temporal's schema ready in %s", time.Since(began).Round(time.Millisecond))

	dial := func(addr, ns string) (client.Client, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return client.DialContext(ctx, client.Options{HostPort: addr, Namespace: ns,
			ConnectionOptions: client.ConnectionOptions{TLS: pki.clientTLS(testClient, "localhost")}})
	}
	began = time.Now()
	s := startTemporalServer(t, serverBin, dir+"/temporal", pg, certs, shards, func(addr string) (client.Client, error) {
		return dial(addr, "temporal-system")
	})
	t.Logf("temporal-server answering over mTLS in %s", time.Since(began).Round(time.Millisecond))
	// The frontend requires a client certificate: without one, or in
	// plain text, a client is refused.
	for what, tlsConfig := range map[string]*tls.Config{"no client certificate": pki.serverOnlyTLS("localhost"), "plain text": nil} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := client.DialContext(ctx, client.Options{HostPort: s.Addr, Namespace: "temporal-system",
			ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
		}
		cancel()
		require.Error(t, err, what)
	}
	tc, err := dial(s.Addr, clusterNamespace)
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	registerNamespace(t, tc, clusterNamespace)

	// Each durawait process has a client certificate of its own. Half of
	// them connect through the SDK's environment variables, half through
	// flags.
	clientCerts := map[int]certPair{}
	connect := func(i int) (flags, env []string) {
		cert, ok := clientCerts[i]
		if !ok {
			cert = pki.clientCert(fmt.Sprintf("durawait-%d", i), fmt.Sprintf("durawait-%d", i))
			clientCerts[i] = cert
		}
		if i%2 == 0 {
			return nil, []string{
				"TEMPORAL_ADDRESS=" + s.Addr,
				"TEMPORAL_NAMESPACE=" + clusterNamespace,
				"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + pki.CAFile,
				"TEMPORAL_TLS_CLIENT_CERT_PATH=" + cert.CertFile,
				"TEMPORAL_TLS_CLIENT_KEY_PATH=" + cert.KeyFile,
				"TEMPORAL_TLS_SERVER_NAME=localhost",
			}
		}
		return []string{"--temporal", s.Addr, "--namespace", clusterNamespace, "--tls-ca-path", pki.CAFile,
			"--tls-cert-path", cert.CertFile, "--tls-key-path", cert.KeyFile, "--tls-server-name", "localhost"}, nil
	}
	return temporalTarget{
		Addr: s.Addr, Namespace: clusterNamespace, connect: connect, client: tc,
		connected: func(i int) []string {
			from := "addr_from=flags"
			if i%2 == 0 {
				from = "addr_from=TEMPORAL_ADDRESS"
			}
			return []string{"addr=" + s.Addr, "namespace=" + clusterNamespace, "tls=true", from}
		},
		cliConnect: []string{"--address " + s.Addr, "--tls-ca-path " + pki.CAFile, "--tls-cert-path ", "--tls-key-path ", "--tls-server-name localhost"},
	}, s, pg
}

// The production Temporal server (built from go.temporal.io/server at the
// pinned version) on PostgreSQL 15, its frontend serving mTLS: two front
// ends and two workers, each its own process connecting with TLS, run the
// roles scenario. Set DURAWAIT_E2E_CLUSTER=1 to run it (make e2e-cluster).
func TestRolesOnAProductionCluster(t *testing.T) {
	if os.Getenv("DURAWAIT_E2E_CLUSTER") == "" {
		t.Skip("needs PostgreSQL and builds temporal-server: make e2e-cluster runs it (DURAWAIT_E2E_CLUSTER=1)")
	}
	target, server, _ := productionCluster(t, 1)
	runRolesScenario(t, target)
	// The server's own clients of its frontend (the system worker's, the
	// services') presented their certificates all along.
	assert.NotContains(t, server.log.String(), "handshake failed")
	assert.NotContains(t, server.log.String(), "error creating sdk client")
}
