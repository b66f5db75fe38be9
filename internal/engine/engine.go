// Package engine runs an embedded Temporal server (SQLite persistence in the
// data dir, WAL mode) and, optionally, the Temporal Web UI, inside the
// durawait process. It follows the shape of the Temporal CLI's dev server.
package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	addr   string
	uiAddr string
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
	// The engine's internal ports (and the frontend's, with Port 0) are
	// picked here and bound by the Temporal server later, which offers no
	// listener hand-over: a port taken in between fails the build, and
	// the engine starts again on others.
	if opts.pickPort == nil {
		opts.pickPort = freePort
	}
	pickFrontend := opts.Port == 0
	var (
		server temporal.Server
		level  *slog.LevelVar
	)
	for attempt := 1; ; attempt++ {
		if pickFrontend {
			if opts.Port, err = opts.pickPort(opts.IP); err != nil {
				return nil, err
			}
		}
		server, level, err = startServer(opts, sqlConf)
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
	e := &Engine{server: server, addr: net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port)), logLevel: level}
	if opts.UIPort > 0 {
		e.startUI(opts)
	}
	return e, nil
}

// Addr is the frontend's gRPC address, for Temporal clients.
func (e *Engine) Addr() string { return e.addr }

// UIAddr is the Web UI's address, or empty when no UI runs.
func (e *Engine) UIAddr() string { return e.uiAddr }

// Stop stops the UI and the engine.
func (e *Engine) Stop() {
	e.logLevel.Set(slog.LevelError)
	if e.ui != nil {
		e.ui.Stop()
	}
	_ = e.server.Stop()
}

func (e *Engine) startUI(opts Options) {
	e.uiAddr = net.JoinHostPort(opts.IP, strconv.Itoa(opts.UIPort))
	e.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                opts.IP,
		Port:                opts.UIPort,
		TemporalGRPCAddress: e.addr,
		EnableUI:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
		DefaultNamespace:    opts.Namespace,
	}))
	ui := e.ui
	go func() {
		// Start blocks until Stop; an error here is a port conflict or similar.
		if err := ui.Start(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("Temporal Web UI stopped", "addr", e.uiAddr, "error", err)
		}
	}()
}

// prepareDatabase creates the schema on first use and the namespace.
func prepareDatabase(opts Options) (*config.SQL, error) {
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("engine: create data dir: %w", err)
	}
	if err := os.Chmod(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("engine: make data dir %s private (0700): %w", opts.DataDir, err)
	}
	file := filepath.Join(opts.DataDir, "temporal.db")
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
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		if err := sqliteschema.SetupSchema(conf); err != nil {
			return nil, damaged(file, fmt.Errorf("engine: create schema in %s: %w", file, err))
		}
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

func serverConfig(opts Options, sqlConf *config.SQL, ports []int) *config.Config {
	frontend := net.JoinHostPort(opts.IP, strconv.Itoa(opts.Port))
	frontendHTTP := net.JoinHostPort(opts.IP, strconv.Itoa(ports[0]))
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
				HTTPAddress:            frontendHTTP,
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
		"frontend": service(opts.Port, ports[0]),
		"history":  service(ports[1], 0),
		"matching": service(ports[2], 0),
		"worker":   service(ports[3], 0),
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
func startServer(opts Options, sqlConf *config.SQL) (_ temporal.Server, _ *slog.LevelVar, err error) {
	defer func() {
		if r := recover(); r != nil {
			fatal, ok := r.(*fatalError)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("engine: start server: %w", fatal)
		}
	}()
	ports := make([]int, 4) // frontend HTTP, history, matching, worker
	taken := map[int]bool{opts.Port: true, opts.UIPort: true}
	for i := range ports {
		for tries := 0; ports[i] == 0 || taken[ports[i]]; tries++ {
			if tries == 10 {
				return nil, nil, fmt.Errorf("engine: find %d distinct free ports: port %d picked again", len(ports), ports[i])
			}
			if ports[i], err = opts.pickPort(opts.IP); err != nil {
				return nil, nil, err
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
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: claim mapper: %w", err)
	}
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
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dyn),
	}
	if opts.MeterProvider != nil {
		actions, err := newActionHandler(opts.MeterProvider)
		if err != nil {
			return nil, nil, err
		}
		serverOpts = append(serverOpts, temporal.WithCustomMetricsHandler(actions))
	}
	building.Store(true)
	server, err := temporal.NewServerFx(serverModule(opts.SpanExporter), serverOpts...)
	building.Store(false)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: build server: %w", err)
	}
	if err := server.Start(); err != nil {
		return nil, nil, damaged(sqlConf.DatabaseName, fmt.Errorf("engine: start server: %w", err))
	}
	return server, level, nil
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
		dynamicconfig.TransferProcessorMaxPollRPS.Key():   engineQueuePollRPS,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():      engineQueuePollRPS,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): engineQueuePollRPS,
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
