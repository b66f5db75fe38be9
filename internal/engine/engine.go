// Package engine runs an embedded Temporal server (SQLite persistence in the
// data dir, WAL mode) and, optionally, the Temporal Web UI, inside the
// durawait process. It follows the shape of the Temporal CLI's dev server.
package engine

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/durawait/durawait/internal/enginecreds"
	"github.com/durawait/durawait/internal/webui"
)

const (
	clusterName = "durawait"
	// embeddedClusterID is fixed so that the database keeps one identity
	// across restarts.
	embeddedClusterID = "6d7572a1-7761-4974-8000-656d62656464"
	// engineQueuePollRPS caps how often each history queue of the
	// embedded engine reads new tasks: high enough that a task is
	// dispatched when it is written, not on a tick.
	engineQueuePollRPS = 1000
	// engineHistoryCacheSize is how many workflows' mutable state the
	// engine's history service keeps in memory; the others are read from
	// the database when their next event comes.
	engineHistoryCacheSize = 1024
	// engineWorkflowTaskRetryMaxInterval caps what the engine adds to the
	// timeout of a workflow task's 4th and later attempts (5 s doubling
	// to 10 minutes by default, meant to slow a workflow that fails each
	// attempt). A cap below that first 5 s step turns the growth off (the
	// engine's backoff then gives up, and the attempt keeps the
	// workflow's own task timeout). The growth is what a kill storm
	// wrecked: each kill timed out the task in hand, and after a few the
	// next attempt of a wait's first task came 20 to 100 s later, past
	// the wait's bound (docs/hosts.md, "Bounds").
	engineWorkflowTaskRetryMaxInterval = time.Second
	// engineQueueWorkers is how many tasks each history queue (transfer,
	// timer, visibility) runs at once: 512 by default, sized for a
	// cluster's database. The embedded engine's SQLite database is one
	// connection, so tasks past a few only wait for it, and each waits
	// inside its 3 s deadline: after a restart with a backlog of due
	// timers, hundreds ran at once, most timed out ("context deadline
	// exceeded"), and were retried with backoff, so a lost workflow task's
	// timeout fired tens of seconds late (docs/soak.md, the run on
	// 2ced506). A task queued in the scheduler instead has no deadline yet.
	engineQueueWorkers = 16
	// engineQueueCheckpoint is how often each history queue records how
	// far it has run (30 s by default). A restarted engine runs again every
	// task past that mark; under kills every few seconds the 30 s mark
	// made each restart redo the backlog of the last ones.
	engineQueueCheckpoint = 3 * time.Second
)

// Options configure the embedded engine.
type Options struct {
	// DataDir holds the SQLite database (temporal.db).
	DataDir string
	// IP the engine's ports bind to; 127.0.0.1 when empty.
	IP string
	// Port of the frontend gRPC service; a free port when zero.
	Port int
	// UIPort of the Web UI; zero runs no UI.
	UIPort int
	// Namespace to create at first start.
	Namespace string
	// SearchAttributes to register on the namespace when it is created (a
	// namespace created earlier gets the ones it lacks through the operator
	// service once the engine runs: see internal/namespace).
	SearchAttributes map[string]enumspb.IndexedValueType
	// Retention of closed workflows, given to the namespace when it is
	// created; 24 h when zero. (An existing namespace's retention is
	// updated once the engine runs: see internal/namespace.)
	Retention time.Duration
	// Logger receives the engine's logs at LogLevel and above.
	Logger   *slog.Logger
	LogLevel slog.Level
	// WorkflowCacheSize, when set, is how many workflows the SDK workers of
	// this process keep in memory between their tasks: the SDK's cache is
	// one for the whole process, and the engine's own workers create it
	// first, with this size.
	WorkflowCacheSize int
	// SpanExporter receives the engine's own spans; nil exports none,
	// whatever the OTEL_* environment says (see serverModule).
	SpanExporter trace.SpanExporter
	// MeterProvider receives the engine's billable actions as the counter
	// ActionsMetric (the server's action counter, by action_type; nothing
	// else of the hundreds of metrics the server emits); nil records none.
	MeterProvider metric.MeterProvider

	// pickPort picks a free port; freePort when nil (a seam for tests).
	pickPort func(ip string) (int, error)
}

// Engine is a running embedded Temporal server.
type Engine struct {
	server temporal.Server
	ui     *uiserver.Server
	// gate serves the UI to a person holding its login link; nil when
	// no UI runs.
	gate   *webui.Gate
	addr   string
	uiAddr string
	// creds are the data dir's credentials, which every client of the
	// engine presents (see access.go); clientTLS is their client side.
	creds     enginecreds.Files
	clientTLS *tls.Config
	// listeners are the internal services' addresses; uiServerAddr the
	// UI's own server's, behind the gate.
	listeners    []Listener
	uiServerAddr string
	// logLevel is raised on Stop: a stopping engine warns about every
	// connection it closes.
	logLevel *slog.LevelVar
}

// Start creates the database on first use and starts the engine. It returns
// once the frontend accepts connections.
func Start(opts Options) (*Engine, error) {
	if opts.IP == "" {
		opts.IP = "127.0.0.1"
	}
	if opts.Namespace == "" {
		return nil, errors.New("engine: namespace is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := checkPorts(opts); err != nil {
		return nil, err
	}
	sqlConf, err := prepareDatabase(opts)
	if err != nil {
		return nil, err
	}
	creds, err := enginecreds.Ensure(opts.DataDir, []string{opts.IP}, time.Now())
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	access, err := newAccess(creds, opts.UIPort > 0)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// The engine's internal ports (and the frontend's, with Port 0) are
	// picked here and bound by the Temporal server later, which offers no
	// listener hand-over: a port taken in between fails the build, and
	// the engine starts again on others.
	if opts.pickPort == nil {
		opts.pickPort = freePort
	}
	pickFrontend := opts.Port == 0
	var (
		server   temporal.Server
		level    *slog.LevelVar
		internal []int
	)
	for attempt := 1; ; attempt++ {
		if pickFrontend {
			if opts.Port, err = opts.pickPort(opts.IP); err != nil {
				return nil, err
			}
		}
		server, level, internal, err = startServer(opts, sqlConf, access)
		if err == nil {
			break
		}
		// A failed start leaves behind the listeners it had opened (and a
		// few dozen goroutines; at most maxStartAttempts times): with the
		// frontend's port configured, the next attempt would find that
		// port taken by the last one, so the start fails with the first
		// cause.
		if attempt == maxStartAttempts || !addressInUse(err) || !pickFrontend {
			return nil, err
		}
		opts.Logger.Warn("an engine port was taken while the engine started; starting on other ports", "error", err)
	}
	e := &Engine{server: server, addr: net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port)), logLevel: level, creds: creds, clientTLS: access.tls.client}
	for i, name := range internalServices {
		e.listeners = append(e.listeners, Listener{Name: name, Addr: net.JoinHostPort(opts.IP, strconv.Itoa(internal[i]))})
	}
	if opts.UIPort > 0 {
		if err := e.startUI(opts, access.claims.uiBearer); err != nil {
			e.Stop()
			return nil, err
		}
	}
	return e, nil
}

// Addr is the frontend's gRPC address, for Temporal clients.
func (e *Engine) Addr() string { return e.addr }

// Credentials are the files a client of the engine presents (its TLS:
// Credentials().ClientTLS()).
func (e *Engine) Credentials() enginecreds.Files { return e.creds }

// Listener is one of the engine's listening addresses.
type Listener struct {
	// Name is the service: "frontend", "history", "matching", "worker",
	// "ui" (the gate) or "ui-server" (the UI's own server, behind it).
	Name string
	Addr string
}

// internalServices are the engine's services on ports of their own
// picking, in the order startServer picks them.
var internalServices = []string{"history", "matching", "worker"}

// Listeners are the engine's listening addresses (docs/security.md, "Every
// listener").
func (e *Engine) Listeners() []Listener {
	out := append([]Listener{{Name: "frontend", Addr: e.addr}}, e.listeners...)
	if e.gate != nil {
		out = append(out, Listener{Name: "ui", Addr: e.uiAddr}, Listener{Name: "ui-server", Addr: e.uiServerAddr})
	}
	return out
}

// ClientTLS is the TLS configuration of a client in this process: it
// trusts the engine's certificate and presents the data dir's.
func (e *Engine) ClientTLS() *tls.Config { return e.clientTLS.Clone() }

// UIAddr is the Web UI's address, or empty when no UI runs.
func (e *Engine) UIAddr() string { return e.uiAddr }

// UILoginURL is the link that logs a browser in to the Web UI (it holds
// the UI's login token: give it only to the data dir's owner), or empty
// when no UI runs.
func (e *Engine) UILoginURL() string {
	if e.gate == nil {
		return ""
	}
	return e.gate.LoginURL("http://" + e.uiAddr)
}

// Stop stops the UI and the engine.
func (e *Engine) Stop() {
	e.logLevel.Set(slog.LevelError)
	if e.gate != nil {
		e.gate.Close()
	}
	if e.ui != nil {
		e.ui.Stop()
	}
	_ = e.server.Stop()
}

// startUI runs the Temporal Web UI's server on a loopback port of its own
// and, on UIPort, the gate that lets a person with the login link through
// to it (internal/webui). The UI's server holds no credential: its
// requests reach the engine with the bearer token the gate adds, so a
// process that reaches its port directly is denied by the engine. The gate
// reaches it over TLS, trusting only the data dir's authority: a process
// that took the UI server's port first (it is picked, then bound by the UI
// server) gets no request and no token.
func (e *Engine) startUI(opts Options, uiAuthorization string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(opts.IP, strconv.Itoa(opts.UIPort)))
	if err != nil {
		return &PortInUseError{Service: ServiceUI, Addr: net.JoinHostPort(opts.IP, strconv.Itoa(opts.UIPort)), Err: err}
	}
	innerPort, err := opts.pickPort(opts.IP)
	if err != nil {
		ln.Close()
		return err
	}
	inner := net.JoinHostPort(opts.IP, strconv.Itoa(innerPort))
	e.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                opts.IP,
		Port:                innerPort,
		TemporalGRPCAddress: e.addr,
		TLS:                 uiconfig.TLS{CaFile: e.creds.CA, EnableHostVerification: true},
		UIServerTLS:         uiconfig.UIServerTLS{CertFile: e.creds.ServerCert, KeyFile: e.creds.ServerKey},
		EnableUI:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
		DefaultNamespace:    opts.Namespace,
	}))
	ui := e.ui
	go func() {
		// Start blocks until Stop. (A port it cannot bind ends the process:
		// the UI server's logger is fatal there, before Start returns.)
		if err := ui.Start(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("Temporal Web UI stopped", "addr", inner, "error", err)
		}
	}()
	e.uiAddr, e.uiServerAddr = ln.Addr().String(), inner
	e.gate, err = webui.Serve(ln, webui.Options{Upstream: "https://" + inner, Authorization: uiAuthorization, Logger: opts.Logger,
		UpstreamTLS: &tls.Config{RootCAs: e.clientTLS.RootCAs, MinVersion: tls.VersionTLS12}})
	if err != nil {
		ui.Stop()
		ln.Close()
		return fmt.Errorf("engine: Web UI: %w", err)
	}
	return nil
}

// prepareDatabase creates the schema on first use and the namespace.
func prepareDatabase(opts Options) (*config.SQL, error) {
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("engine: create data dir: %w", err)
	}
	if err := os.Chmod(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("engine: make data dir %s private (0700): %w", opts.DataDir, err)
	}
	file := DatabaseFile(opts.DataDir)
	conf := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: file,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "NORMAL",
			"busy_timeout": "10000",
		},
	}
	_, err := os.Stat(file)
	fresh := errors.Is(err, os.ErrNotExist)
	if fresh {
		if err := sqliteschema.SetupSchema(conf); err != nil {
			return nil, damaged(file, fmt.Errorf("engine: create schema in %s: %w", file, err))
		}
	}
	if err := ensureSchema(conf, fresh, opts.Logger); err != nil {
		return nil, damaged(file, err)
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, opts.Namespace, false, opts.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("engine: namespace %q: %w", opts.Namespace, err)
	}
	if opts.Retention > 0 {
		ns.Detail.Config.Retention = durationpb.New(opts.Retention)
	}
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return nil, damaged(file, fmt.Errorf("create namespace %q: %w", opts.Namespace, err))
	}
	if err := privateDatabase(file); err != nil {
		return nil, err
	}
	return conf, nil
}

// privateDatabase makes the database and its WAL and shared-memory files
// private (0600), whatever the umask made them. SQLite gives the -wal and
// -shm files it creates later the database file's permissions.
func privateDatabase(file string) error {
	for _, f := range []string{file, file + "-wal", file + "-shm"} {
		if err := os.Chmod(f, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("engine: make %s private (0600): %w", f, err)
		}
	}
	return nil
}

// serverConfig is the engine's configuration, its internal services on
// ports (history, matching, worker). The frontend's HTTP API is off: no
// client of durawait needs it, and it is one listener less to guard.
func serverConfig(opts Options, sqlConf *config.SQL, ports []int) *config.Config {
	frontend := net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port))
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = opts.IP
	conf.Persistence.DefaultStore = "sqlite"
	conf.Persistence.VisibilityStore = "sqlite"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				ClusterID:              embeddedClusterID,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	service := func(grpcPort, httpPort int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = grpcPort
		s.RPC.HTTPPort = httpPort
		s.RPC.BindOnIP = opts.IP
		return s
	}
	conf.Services = map[string]config.Service{
		"frontend": service(opts.Port, 0),
		"history":  service(ports[0], 0),
		"matching": service(ports[1], 0),
		"worker":   service(ports[2], 0),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend
	return &conf
}

// addressInUse reports whether err is a port taken by someone else (the
// Temporal server's dependency injection does not always keep the cause).
func addressInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// maxStartAttempts bounds the engine's starts on freshly picked ports.
const maxStartAttempts = 5

// startServer builds and starts the Temporal server on freshly picked
// internal ports, each distinct from the others and from the frontend's
// and the UI's. A fatal log line of the server while it is built (a port
// taken in between: the listeners bind then, on this goroutine) is
// returned as an error.
func startServer(opts Options, sqlConf *config.SQL, access *access) (_ temporal.Server, _ *slog.LevelVar, internal []int, err error) {
	defer func() {
		if r := recover(); r != nil {
			fatal, ok := r.(*fatalError)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("engine: start server: %w", fatal)
		}
	}()
	ports := make([]int, 3) // history, matching, worker
	taken := map[int]bool{opts.Port: true, opts.UIPort: true}
	for i := range ports {
		for tries := 0; ports[i] == 0 || taken[ports[i]]; tries++ {
			if tries == 10 {
				return nil, nil, nil, fmt.Errorf("engine: find %d distinct free ports: port %d picked again", len(ports), ports[i])
			}
			if ports[i], err = opts.pickPort(opts.IP); err != nil {
				return nil, nil, nil, err
			}
		}
		taken[ports[i]] = true
	}
	conf := serverConfig(opts, sqlConf, ports)
	level := &slog.LevelVar{}
	level.Set(opts.LogLevel)
	// building is set while NewServerFx runs: a fatal line then panics on
	// this goroutine, where it is recovered (Start runs its hooks on
	// goroutines of its own, where it could not be).
	var building atomic.Bool
	logger := newTemporalLogger(opts.Logger, level, &building)
	hostOf := func(svc primitives.ServiceName) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(opts.IP, strconv.Itoa(conf.Services[string(svc)].RPC.GRPCPort)))
	}
	dyn := engineDynamicConfig(opts)
	serverOpts := []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: hostOf(primitives.FrontendService),
			primitives.HistoryService:  hostOf(primitives.HistoryService),
			primitives.MatchingService: hostOf(primitives.MatchingService),
			primitives.WorkerService:   hostOf(primitives.WorkerService),
		}),
		temporal.WithLogger(logger),
		temporal.WithTLSConfigFactory(access.tls),
		temporal.WithAuthorizer(authorization.NewDefaultAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return access.claims }),
		temporal.WithDynamicConfigClient(dyn),
	}
	if opts.MeterProvider != nil {
		actions, err := newActionHandler(opts.MeterProvider)
		if err != nil {
			return nil, nil, nil, err
		}
		serverOpts = append(serverOpts, temporal.WithCustomMetricsHandler(actions))
	}
	building.Store(true)
	server, err := temporal.NewServerFx(serverModule(opts.SpanExporter), serverOpts...)
	building.Store(false)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("engine: build server: %w", err)
	}
	if err := server.Start(); err != nil {
		return nil, nil, nil, damaged(sqlConf.DatabaseName, fmt.Errorf("engine: start server: %w", err))
	}
	return server, level, ports, nil
}

// freePort finds a port free on ip now, preferring one below the kernel's
// ephemeral range (32768 and up), where outgoing connections never take it.
func freePort(ip string) (int, error) {
	for range 50 {
		port := 20000 + rand.IntN(12000)
		if l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("engine: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// engineDynamicConfig is the embedded engine's dynamic configuration: the
// defaults of a Temporal cluster, but for what one process on one machine
// wants otherwise.
func engineDynamicConfig(opts Options) dynamicconfig.StaticClient {
	dyn := dynamicconfig.StaticClient{
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// One engine process: a task queue split in partitions only makes
		// a task and its poller meet later (a task written to one
		// partition waits for a poll forwarded from another).
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// The engine has one history shard, and each of its queues reads
		// new tasks at most MaxPollRPS times a second (20 by default):
		// past that rate every activity and workflow task waits for the
		// next 50 ms tick, five ticks on an agent's path from exit to
		// answer.
		dynamicconfig.TransferProcessorMaxPollRPS.Key():             engineQueuePollRPS,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():                engineQueuePollRPS,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key():           engineQueuePollRPS,
		dynamicconfig.TransferProcessorSchedulerWorkerCount.Key():   engineQueueWorkers,
		dynamicconfig.TimerProcessorSchedulerWorkerCount.Key():      engineQueueWorkers,
		dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Key(): engineQueueWorkers,
		dynamicconfig.TransferProcessorUpdateAckInterval.Key():      engineQueueCheckpoint,
		dynamicconfig.TimerProcessorUpdateAckInterval.Key():         engineQueueCheckpoint,
		dynamicconfig.VisibilityProcessorUpdateAckInterval.Key():    engineQueueCheckpoint,
		// A wait's workflow is touched at its start, when its state
		// changes and at its end: between, its mutable state need not
		// stay in memory (128,000 by default). Measured at 5,000 open
		// waits (docs/performance.md): 30 KiB less per wait, starts 15 %
		// slower in a burst (the evicted states are read back).
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): engineHistoryCacheSize,
		// A workflow task that timed out with a killed worker is tried
		// again after the workflow's task timeout, however often.
		dynamicconfig.WorkflowTaskRetryMaxInterval.Key(): engineWorkflowTaskRetryMaxInterval,
	}
	if opts.WorkflowCacheSize > 0 {
		dyn[dynamicconfig.WorkerStickyCacheSize.Key()] = opts.WorkflowCacheSize
	}
	return dyn
}
