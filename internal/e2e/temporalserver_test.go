package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// temporalServerBinaries are the production Temporal server and its SQL
// schema tool, built from go.temporal.io/server at the version go.mod pins
// (the `tool` lines of go.mod): $DURAWAIT_TEMPORAL_SERVER and
// $DURAWAIT_TEMPORAL_SQL_TOOL when set (make e2e-cluster builds them into
// bin/), else built now into the test's binary folder.
func temporalServerBinaries(t testing.TB) (server, sqlTool string) {
	t.Helper()
	build := func(env, name, pkg string) string {
		if path := os.Getenv(env); path != "" {
			return path
		}
		out := filepath.Join(filepath.Dir(bin.durawait), name)
		if _, err := os.Stat(out); err == nil {
			return out
		}
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = "../.."
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s: %s", pkg, b)
		return out
	}
	return build("DURAWAIT_TEMPORAL_SERVER", "temporal-server", "go.temporal.io/server/cmd/server"),
		build("DURAWAIT_TEMPORAL_SQL_TOOL", "temporal-sql-tool", "go.temporal.io/server/cmd/tools/sql")
}

// temporalSchemaDir is the SQL schema folder of the pinned server module.
func temporalSchemaDir(t testing.TB) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	require.NoError(t, err)
	return filepath.Join(strings.TrimSpace(string(out)), "schema", "postgresql", "v12")
}

// setUpTemporalSchema creates Temporal's two databases on pg and brings
// their schemas to the pinned server's version with its SQL tool, as an
// operator installing Temporal does.
func setUpTemporalSchema(t testing.TB, sqlTool string, pg *postgres) {
	t.Helper()
	schema := temporalSchemaDir(t)
	for db, folder := range map[string]string{"temporal": "temporal", "temporal_visibility": "visibility"} {
		base := []string{"--plugin", "postgres12", "--ep", pg.Host, "--port", fmt.Sprint(pg.Port), "--user", pg.User, "--db", db}
		for _, args := range [][]string{
			{"create-database"},
			{"setup-schema", "--version", "0.0"},
			{"update-schema", "--schema-dir", filepath.Join(schema, folder, "versioned")},
		} {
			out, err := exec.Command(sqlTool, append(base, args...)...).CombinedOutput()
			require.NoError(t, err, "temporal-sql-tool %s on %s: %s", args[0], db, out)
		}
	}
}

// temporalServer is a running production temporal-server: four services in
// one process, on PostgreSQL, its frontend serving mTLS.
type temporalServer struct {
	// Addr is the frontend's gRPC address.
	Addr string
	// Metrics is the address of its Prometheus listener (GET /metrics):
	// the server's own metrics, its billable "action" counter among them
	// (temporalServerActions reads it).
	Metrics string
	log     *syncBuffer
	cmd     *exec.Cmd
	done    chan struct{}
}

// temporalServerTLS are the certificates of the server: its own, the one
// its system worker presents to the frontend, and the CA of both.
type temporalServerTLS struct {
	CAFile       string
	Server       certPair
	SystemWorker certPair
}

// startTemporalServer writes the server's configuration into dir and
// starts it on pg; it returns once the frontend answers an mTLS client.
func startTemporalServer(t testing.TB, serverBin, dir string, pg *postgres, certs temporalServerTLS, shards int,
	dial func(addr string) (client.Client, error)) *temporalServer {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	ports := map[string]string{}
	for _, name := range []string{"frontend", "frontendHTTP", "history", "matching", "worker"} {
		_, port, err := net.SplitHostPort(freeAddr(t))
		require.NoError(t, err)
		ports[name] = port
		// The membership table keeps ports as smallint: below 32768,
		// under Linux's ephemeral range.
		ports[name+"Membership"] = freeLowPort(t)
	}
	_, ports["metrics"], _ = net.SplitHostPort(freeAddr(t))
	dynamic := filepath.Join(dir, "dynamicconfig.yaml")
	// The namespace registry is re-read every second instead of every
	// 10 s, so a namespace and its search attributes are in use soon after
	// the operator created them.
	require.NoError(t, os.WriteFile(dynamic, []byte("system.namespaceCacheRefreshInterval:\n  - value: 1s\n"), 0o644))
	config := filepath.Join(dir, "temporal.yaml")
	require.NoError(t, os.WriteFile(config, []byte(temporalServerConfig(pg, certs, ports, dynamic, shards)), 0o644))

	s := &temporalServer{Addr: net.JoinHostPort("127.0.0.1", ports["frontend"]), Metrics: net.JoinHostPort("127.0.0.1", ports["metrics"]),
		log: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(serverBin, "--config-file", config, "--allow-no-auth", "start")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	require.NoError(t, s.cmd.Start())
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("temporal-server log (last 20000 bytes):\n%s", tail(s.log.String(), 20000))
		}
	})
	eventually(t, "the Temporal frontend to answer over mTLS", func() bool {
		select {
		case <-s.done:
			t.Fatalf("temporal-server exited during start-up:\n%s", tail(s.log.String(), 20000))
		default:
		}
		c, err := dial(s.Addr)
		if err != nil {
			return false
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err == nil
	})
	return s
}

// temporalServerConfig is the server's YAML: PostgreSQL (the postgres12
// plugin) for the default and visibility stores, the given number of
// history shards, one cluster, every
// service on 127.0.0.1, the frontend requiring client certificates, and
// the server's own clients of its frontend (the system worker's SDK
// clients, the services' frontend clients) presenting certificates too;
// its metrics on a Prometheus listener on 127.0.0.1 (the OpenTelemetry
// framework: counters end in _total).
func temporalServerConfig(pg *postgres, certs temporalServerTLS, ports map[string]string, dynamic string, shards int) string {
	store := func(db string, conns int) string {
		return fmt.Sprintf(`      sql:
        pluginName: postgres12
        databaseName: %s
        connectAddr: %q
        connectProtocol: tcp
        user: %s
        password: ""
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, db, pg.Addr(), pg.User, conns, conns)
	}
	service := func(name string, http bool) string {
		s := fmt.Sprintf("  %s:\n    rpc:\n      grpcPort: %s\n      membershipPort: %s\n      bindOnLocalHost: true\n",
			name, ports[name], ports[name+"Membership"])
		if http {
			s += fmt.Sprintf("      httpPort: %s\n", ports[name+"HTTP"])
		}
		return s
	}
	return `log:
  stdout: true
  level: warn

persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ` + strconv.Itoa(shards) + `
  datastores:
    default:
` + store("temporal", 20) + `    visibility:
` + store("temporal_visibility", 10) + `
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  metrics:
    prometheus:
      framework: opentelemetry
      listenAddress: 127.0.0.1:` + ports["metrics"] + `
      handlerPath: /metrics
  tls:
    frontend:
      server:
        certFile: ` + certs.Server.CertFile + `
        keyFile: ` + certs.Server.KeyFile + `
        requireClientAuth: true
        clientCaFiles:
          - ` + certs.CAFile + `
      client:
        serverName: localhost
        rootCaFiles:
          - ` + certs.CAFile + `
    systemWorker:
      certFile: ` + certs.SystemWorker.CertFile + `
      keyFile: ` + certs.SystemWorker.KeyFile + `
      client:
        serverName: localhost
        rootCaFiles:
          - ` + certs.CAFile + `

services:
` + service("frontend", true) + service("history", false) + service("matching", false) + service("worker", false) + `
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: localhost:` + ports["frontend"] + `

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: ` + dynamic + `
  pollInterval: 10s
`
}

// registerNamespace creates namespace ns (retention one day) and waits
// until it can be described.
func registerNamespace(t testing.TB, tc client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := tc.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	require.NoError(t, err)
	eventually(t, "the namespace to exist", func() bool {
		_, err := tc.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
		return err == nil
	})
}

// freeLowPort is a free TCP port on 127.0.0.1 below 32768, drawn at
// random from 20000-32767.
func freeLowPort(t testing.TB) string {
	t.Helper()
	for range 1000 {
		port := fmt.Sprint(20000 + rand.IntN(32768-20000))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port below 32768")
	return ""
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
