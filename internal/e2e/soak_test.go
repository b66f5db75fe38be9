package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/workflows"
)

// The crash soak (issue 12, "A thousand crashes"): N waits of all three
// kinds in flight against one `durawait serve`, which is killed with
// SIGKILL M times at random moments (among them mid-start and mid-result)
// and restarted, every client calling again after each crash; the
// downstream probe server is killed at random too. Each wait's outcome is
// planned up front, and at the end every wait must have finished with
// exactly that outcome, none twice, none lost. docs/soak.md describes it;
// `make soak` runs the big one (DURAWAIT_SOAK_WAITS=200,
// DURAWAIT_SOAK_KILLS=1000), `make test` this small default.
func TestSoakCrashes(t *testing.T) {
	knobs := soakKnobsFromEnv(t)
	s := newSoak(t, knobs)
	s.run()
	s.verify()
}

// soakKnobs are the soak's size and randomness.
type soakKnobs struct {
	waits, kills int
	seed         int64
	// budget, when set, stops the kills early (the summary says so).
	budget time.Duration
}

func soakKnobsFromEnv(t *testing.T) soakKnobs {
	k := soakKnobs{waits: 12, kills: 6, seed: time.Now().UnixNano()}
	envInt := func(name string, into *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, name)
			*into = n
		}
	}
	envInt("DURAWAIT_SOAK_WAITS", &k.waits)
	envInt("DURAWAIT_SOAK_KILLS", &k.kills)
	if v := os.Getenv("DURAWAIT_SOAK_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "DURAWAIT_SOAK_SEED")
		k.seed = n
	}
	if v := os.Getenv("DURAWAIT_SOAK_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "DURAWAIT_SOAK_BUDGET")
		k.budget = d
	}
	return k
}

// soakKind is what a wait waits for and how it is planned to end.
type soakKind int

const (
	kindMatch        soakKind = iota // wait_for, matched after its flip
	kindTimeout                      // wait_for that never flips: timeout
	kindAgentOK                      // start_agent/wait_agent: succeeded with its output
	kindAgentBlocked                 // start_agent/wait_agent: blocked (auth_failed)
	kindText                         // wait_for_text: matched after its text is printed
	soakKinds
)

func (k soakKind) String() string {
	return [...]string{"wait_for matched", "wait_for timeout", "agent succeeded", "agent blocked", "wait_for_text matched"}[k]
}

// soakWait is one planned wait and what its client saw.
type soakWait struct {
	id        int
	kind      soakKind
	flipAfter time.Duration // after the first call; none for kindTimeout
	maxWait   int           // wait_for's max_wait_sec
	// protocol is the MCP protocol its client speaks: 2025-11-25 (mcp-go,
	// a session) or 2026-07-28 (the official Go SDK, stateless).
	protocol string

	startedAt atomic.Int64 // unix ns of the first call, 0 before
	flipped   atomic.Bool
	// flipLog is the probe's call log size just before a wait_for's flip.
	flipLog atomic.Int64
	done    atomic.Bool
	// wrong says how the result differed from the plan ("" when right).
	wrong      string
	invocation string // the agent invocation the client waited on
	// calls are the client's calls, with their time and failure, for the
	// report of a wait that ran twice.
	calls []string
}

func (sw *soakWait) path(s *soak) string { return s.w.path(fmt.Sprintf("probe/w%d", sw.id)) }
func (sw *soakWait) prompt() string {
	if sw.kind == kindAgentBlocked {
		return fmt.Sprintf("bl%d", sw.id)
	}
	return fmt.Sprintf("ok%d", sw.id)
}
func (sw *soakWait) text() string { return fmt.Sprintf("SOAK%dZ", sw.id) }

// soak is one run: the workspace, the server, the population of waits and
// the figures of the report.
type soak struct {
	t     *testing.T
	knobs soakKnobs
	rng   *rand.Rand // the kill loop's only: plans, moments, choices
	w     *tmuxWorld
	addr  string
	pane  paneInfo
	srv   *soakServer

	typing sync.Mutex // one line typed into the pane at a time

	mu      sync.Mutex
	waits   []*soakWait
	pending int // finished waits not yet replaced
	errs    map[string]int
	wg      sync.WaitGroup

	inflightStarts atomic.Int64 // first calls sent, not yet answered or failed
	stopRefill     bool

	// figures
	killsByKind      map[string]int
	downstreamKills  int
	healthz          []time.Duration
	recovery         []time.Duration
	notRecovered     int
	midStartInFlight []int
	midResultPending []int
	began            time.Time
	killsDone        int
	budgetHit        bool
	rightByProtocol  map[string]int
	watch            recoveryWatch
	killTimes        []time.Time
	startsRepeated   int // start_agent answered after a failed call, by repeating it with its request_id
	// unsampledTimeouts are wait_for waits that flipped but answered
	// timeout with no probe call of theirs between the flip and the bound.
	unsampledTimeouts int
	// serverTimeouts are wait_for waits that flipped but were answered by
	// Temporal's timeout of their loop, from its last heartbeat.
	serverTimeouts int
	startFailures  map[string]int // durawait exits during start-up, by their last lines
	// settleFrom is when the judge began waiting for runs listed open to
	// close; lateCloses counts those that closed after their client's
	// answer (settleOpen).
	settleFrom time.Time
	lateCloses int
	cleanup    sync.Once
}

func newSoak(t *testing.T, knobs soakKnobs) *soak {
	w := newWorkspace(t)
	require.NoError(t, os.MkdirAll(w.path("probe"), 0o755))
	tw := newTmuxWorldIn(w, 300, "\n"+agentsTOML(w, 20))
	s := &soak{
		t: t, knobs: knobs, rng: rand.New(rand.NewSource(knobs.seed)), w: tw, addr: freeAddr(t),
		errs: map[string]int{}, killsByKind: map[string]int{}, startFailures: map[string]int{},
	}
	t.Logf("soak: N=%d waits, M=%d kills, seed %d (DURAWAIT_SOAK_SEED=%d replays it)", knobs.waits, knobs.kills, knobs.seed, knobs.seed)
	return s
}

// soakServer is the one `durawait serve` of the soak, restarted after each
// kill on the same address and data dir; its output goes to a file.
type soakServer struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startServer starts durawait and waits for /healthz 200. A durawait that
// exits during start-up is started again, as a supervisor would (at most
// five times in a row); each such exit is counted with its last error.
func (s *soak) startServer() {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		failure := s.tryStart()
		if failure == "" {
			return
		}
		s.startFailures[failure]++
		s.t.Logf("soak: durawait exited during start-up (attempt %d): %s", attempt, failure)
		require.Less(s.t, attempt, 5, "durawait failed to start five times in a row; see the lines above")
	}
}

// tryStart starts durawait once; it answers "" once /healthz is 200, or
// the last error lines of a durawait that exited during start-up.
func (s *soak) tryStart() string {
	s.t.Helper()
	logf, err := os.OpenFile(s.w.path("durawait.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	fmt.Fprintf(logf, "=== soak: start %d at %s\n", len(s.healthz), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin.durawait, serveArgs(s.w.config, s.addr)...)
	cmd.Env = append(os.Environ(), s.w.env()...)
	cmd.Stdout, cmd.Stderr = logf, logf
	began := time.Now()
	require.NoError(s.t, cmd.Start())
	logf.Close()
	srv := &soakServer{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(srv.done) }()
	s.srv = srv
	s.cleanup.Do(func() { s.t.Cleanup(func() { s.killServer() }) })
	if !awaitHealthy(s.t, s.addr, srv.done) {
		return s.lastErrors()
	}
	s.healthz = append(s.healthz, time.Since(began))
	return ""
}

// lastErrors are the last ERROR lines (and the last line) of durawait's
// log since its last start.
func (s *soak) lastErrors() string {
	log := readFile(s.w.path("durawait.log"))
	if i := strings.LastIndex(log, "=== soak: start"); i >= 0 {
		log = log[i:]
	}
	var errs []string
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, l := range lines {
		if strings.Contains(l, "level=ERROR") || strings.Contains(l, "Error:") || strings.HasPrefix(l, "durawait:") || strings.Contains(l, "panic") {
			errs = append(errs, l)
		}
	}
	errs = append(errs, lines[len(lines)-1])
	if len(errs) > 6 {
		errs = errs[len(errs)-6:]
	}
	return strings.Join(errs, "\n    ")
}

// killServer kills durawait with SIGKILL, as a crash would.
func (s *soak) killServer() {
	s.markKill()
	_ = s.srv.cmd.Process.Signal(syscall.SIGKILL)
	<-s.srv.done
	s.killTimes = append(s.killTimes, time.Now())
}

// probePID is the demo probe server durawait runs (a stdio child, found
// among its descendants through /proc: a child of any of its threads), or 0.
func (s *soak) probePID() int {
	queue := []int{s.srv.cmd.Process.Pid}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
			for _, f := range strings.Fields(string(b)) {
				if cmdline, err := os.ReadFile("/proc/" + f + "/cmdline"); err == nil && strings.HasPrefix(string(cmdline), bin.demoprobe+"\x00") {
					return atoi(f)
				}
				queue = append(queue, atoi(f))
			}
		}
	}
	return 0
}

// run keeps N waits in flight while it kills durawait M times, then lets
// every wait finish.
func (s *soak) run() {
	s.began = time.Now()
	s.startServer()
	c, err := s.connectMCPGo(context.Background())
	require.NoError(s.t, err)
	s.pane = listPanes(s.t, c)[0]
	_ = c.Close()

	stopFlips := make(chan struct{})
	flipsDone := make(chan struct{})
	go func() { defer close(flipsDone); s.flipper(stopFlips) }()

	s.launch(s.knobs.waits)
	for i := 0; i < s.knobs.kills; i++ {
		if s.knobs.budget > 0 && time.Since(s.began) > s.knobs.budget {
			s.budgetHit = true
			break
		}
		s.killCycle(i)
		s.killsDone++
		if (i+1)%50 == 0 {
			s.t.Logf("soak: %d kills done after %s; %s", i+1, time.Since(s.began).Round(time.Second), s.progress())
		}
	}
	s.mu.Lock()
	s.stopRefill = true
	s.mu.Unlock()

	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(6 * time.Minute):
		s.t.Errorf("soak: waits still unfinished 6 minutes after the last kill (lost): %s", s.progress())
	}
	close(stopFlips)
	<-flipsDone
}

// progress is a one-line count of the waits by state.
func (s *soak) progress() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := 0
	for _, sw := range s.waits {
		if sw.done.Load() {
			done++
		}
	}
	return fmt.Sprintf("%d waits planned, %d finished", len(s.waits), done)
}

// killCycle is one kill of durawait at a moment of its kind, then the
// restart; now and then the downstream server is killed before.
func (s *soak) killCycle(i int) {
	if i%3 == 1 || s.rng.Float64() < 0.2 {
		s.killDownstream(time.Duration(200+s.rng.Intn(800)) * time.Millisecond)
	}
	if i%10 == 9 { // a longer quiet spell: heartbeat timeouts pass, re-attached work moves on
		s.gap(time.Duration(6000+s.rng.Intn(4000)) * time.Millisecond)
	}
	switch i % 4 {
	case 0:
		s.killMidStart()
	case 2:
		s.killMidResult()
	default:
		s.gap(time.Duration(200+s.rng.Intn(1800)) * time.Millisecond)
		s.killServer()
		s.killsByKind["random"]++
	}
	s.startServer()
	s.refill()
}

// killDownstream kills the demo probe server (durawait's stdio child)
// after d, once it runs (durawait starts it with the first probe after a
// restart): durawait restarts it, and the waits must carry on.
func (s *soak) killDownstream(d time.Duration) {
	s.gap(d)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pid := s.probePID(); pid > 0 {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				s.downstreamKills++
			}
			return
		}
		s.gap(20 * time.Millisecond)
	}
}

// gap waits d; meanwhile it notes when the probes sample again after the
// last restart (the demo probe's call log grows): the recovery time.
func (s *soak) gap(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		s.noteRecovery()
		time.Sleep(20 * time.Millisecond)
	}
	s.noteRecovery()
}

// recoveryWatch is the kill whose recovery is being watched: when it
// happened and the call log's size then.
type recoveryWatch struct {
	killedAt time.Time
	size     int64
	active   bool
}

// readsBetween counts the probe calls of sw's file logged between the call
// log offsets from and to; -1 when from is unknown (never flipped).
func (s *soak) readsBetween(sw *soakWait, from, to int64) int {
	b, err := os.ReadFile(s.w.path("calls.log"))
	if err != nil || from <= 0 || from > int64(len(b)) {
		return -1
	}
	to = min(to, int64(len(b)))
	needle := fmt.Sprintf("probe/w%d\"", sw.id)
	return strings.Count(string(b[from:max(from, to)]), needle)
}

func (s *soak) callLogSize() int64 {
	fi, err := os.Stat(s.w.path("calls.log"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (s *soak) noteRecovery() {
	rw := &s.watch
	if rw.active && s.callLogSize() > rw.size {
		s.recovery = append(s.recovery, time.Since(rw.killedAt))
		rw.active = false
	}
}

// markKill records a kill for the recovery measure: the probe loops are
// killed with durawait (the probe server dies with it), so the call log
// grows again only once they sample after the restart.
func (s *soak) markKill() {
	if s.watch.active {
		s.notRecovered++
	}
	s.watch = recoveryWatch{killedAt: time.Now(), size: s.callLogSize(), active: true}
}

// killMidStart starts a burst of new waits and kills durawait while their
// first calls are in flight.
func (s *soak) killMidStart() {
	s.gap(time.Duration(200+s.rng.Intn(800)) * time.Millisecond)
	s.mu.Lock()
	n := max(s.pending, 2)
	s.pending -= n
	s.mu.Unlock()
	s.launch(n)
	deadline := time.Now().Add(2 * time.Second)
	for s.inflightStarts.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(time.Duration(s.rng.Intn(20)) * time.Millisecond)
	inFlight := int(s.inflightStarts.Load())
	s.killServer()
	if inFlight > 0 {
		s.killsByKind["mid-start"]++
		s.midStartInFlight = append(s.midStartInFlight, inFlight)
	} else {
		s.killsByKind["random (a mid-start with no start left in flight)"]++
	}
}

// killMidResult flips a few running waits at once and kills durawait as
// soon as the first of them has its result delivered, while the others'
// results are being delivered.
func (s *soak) killMidResult() {
	s.gap(time.Duration(200+s.rng.Intn(800)) * time.Millisecond)
	var picked []*soakWait
	s.mu.Lock()
	for _, sw := range s.waits {
		if len(picked) == 4 {
			break
		}
		if sw.kind != kindTimeout && sw.startedAt.Load() != 0 && !sw.flipped.Load() && !sw.done.Load() {
			picked = append(picked, sw)
		}
	}
	s.mu.Unlock()
	for _, sw := range picked {
		s.flip(sw)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && !slices.ContainsFunc(picked, func(sw *soakWait) bool { return sw.done.Load() }) {
		s.noteRecovery()
		time.Sleep(5 * time.Millisecond)
	}
	pendingAtKill := 0
	delivered := 0
	for _, sw := range picked {
		if sw.done.Load() {
			delivered++
		} else {
			pendingAtKill++
		}
	}
	s.killServer()
	if delivered > 0 && pendingAtKill > 0 {
		s.killsByKind["mid-result"]++
		s.midResultPending = append(s.midResultPending, pendingAtKill)
	} else {
		s.killsByKind["after flips (no result delivered yet, or all)"]++
	}
}

// refill replaces the finished waits with new ones.
func (s *soak) refill() {
	s.mu.Lock()
	n := s.pending
	if s.stopRefill || n <= 0 {
		s.mu.Unlock()
		return
	}
	s.pending = 0
	s.mu.Unlock()
	s.launch(n)
}

// launch plans n new waits and starts their clients.
func (s *soak) launch(n int) {
	for range n {
		sw := s.plan()
		s.mu.Lock()
		s.waits = append(s.waits, sw)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runWait(sw)
			sw.done.Store(true)
			s.mu.Lock()
			if !s.stopRefill {
				s.pending++
			}
			s.mu.Unlock()
		}()
	}
}

// plan decides a new wait's kind and outcome, and prepares what it waits on.
func (s *soak) plan() *soakWait {
	s.mu.Lock()
	id := len(s.waits)
	s.mu.Unlock()
	weights := []int{30, 15, 20, 10, 25} // by soakKind
	r := s.rng.Intn(100)
	kind := soakKind(0)
	for r >= weights[kind] {
		r -= weights[kind]
		kind++
	}
	if id < int(soakKinds) {
		kind = soakKind(id) // the first waits cover every planned outcome, whatever the seed
	}
	sw := &soakWait{id: id, kind: kind, maxWait: 240,
		flipAfter: time.Duration(1000+s.rng.Intn(11000)) * time.Millisecond,
		// Both protocol eras, each for every planned outcome (ids 0-4 one,
		// 5-9 the other, and so on).
		protocol: soakProtocols[(id/int(soakKinds))%len(soakProtocols)]}
	switch kind {
	case kindMatch:
		s.w.write(fmt.Sprintf("probe/w%d", id), fmt.Sprintf("pending %d", id))
	case kindTimeout:
		sw.maxWait = 8 + s.rng.Intn(18)
		s.w.write(fmt.Sprintf("probe/w%d", id), fmt.Sprintf("pending %d", id))
	case kindAgentOK:
		s.script(sw.prompt(),
			`{"type":"system","subtype":"init","session_id":"{session}"}`,
			fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"text","text":"working on %d"}]}}`, id),
			fmt.Sprintf("@wait go%d", id),
			fmt.Sprintf(`{"type":"result","subtype":"success","is_error":false,"result":"done %d","session_id":"{session}"}`, id))
	case kindAgentBlocked:
		s.script(sw.prompt(),
			`{"type":"thread.started","thread_id":"th-1"}`, `{"type":"turn.started"}`,
			fmt.Sprintf("@wait go%d", id),
			`{"type":"turn.failed","error":{"message":"401 Unauthorized: invalid api key"}}`, `@exit 1`)
	}
	return sw
}

func (s *soak) script(name string, lines ...string) {
	require.NoError(s.t, os.WriteFile(s.w.path("scripts/"+name+".script"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// flipper flips each wait when its planned moment comes.
func (s *soak) flipper(stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		var due []*soakWait
		for _, sw := range s.waits {
			at := sw.startedAt.Load()
			if sw.kind != kindTimeout && at != 0 && !sw.flipped.Load() && time.Since(time.Unix(0, at)) >= sw.flipAfter {
				due = append(due, sw)
			}
		}
		s.mu.Unlock()
		for _, sw := range due {
			s.flip(sw)
		}
	}
}

// flip makes a wait's condition true: the file says READY, the agent CLI
// goes on, the text is printed in the pane. Only once.
func (s *soak) flip(sw *soakWait) {
	if sw.flipped.Swap(true) {
		return
	}
	switch sw.kind {
	case kindMatch:
		sw.flipLog.Store(s.callLogSize())
		if err := os.WriteFile(sw.path(s), []byte(fmt.Sprintf("READY %d", sw.id)), 0o644); err != nil {
			s.t.Errorf("flip %d: %v", sw.id, err)
		}
	case kindAgentOK, kindAgentBlocked:
		if err := os.WriteFile(s.w.path(fmt.Sprintf("scripts/go%d", sw.id)), nil, 0o644); err != nil {
			s.t.Errorf("flip %d: %v", sw.id, err)
		}
	case kindText:
		s.typing.Lock()
		defer s.typing.Unlock()
		// The command line typed does not hold the text; its output does.
		out, err := exec.Command("tmux", "-S", s.w.socket, "send-keys", "-t", s.pane.PaneID, "-l",
			fmt.Sprintf("printf '%%s%%s\\n' SOAK %dZ", sw.id), ";", "send-keys", "-t", s.pane.PaneID, "Enter").CombinedOutput()
		if err != nil {
			s.t.Errorf("flip %d: tmux: %v: %s", sw.id, err, out)
		}
	}
}

// soakProtocols are the MCP protocol versions the soak's clients speak.
var soakProtocols = []string{mcp.ProtocolVersion20251125, "2026-07-28"}

// soakConn is a soak client's connection: mcp-go in a 2025-11-25 session,
// or the official Go SDK speaking 2026-07-28.
type soakConn interface {
	call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error)
	close()
}

type mcpGoConn struct{ c *mcpClient }

func (m mcpGoConn) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return m.c.call(ctx, tool, args, "")
}
func (m mcpGoConn) close() { _ = m.c.Close() }

// goSDKConn is the official Go SDK's client session; its answers are
// given in mcp-go's type (the text and isError are what the soak reads).
type goSDKConn struct{ session *sdkmcp.ClientSession }

func (g goSDKConn) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := g.session.CallTool(ctx, &sdkmcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	out := &mcp.CallToolResult{IsError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*sdkmcp.TextContent); ok {
			out.Content = append(out.Content, mcp.NewTextContent(tc.Text))
		}
	}
	return out, nil
}
func (g goSDKConn) close() { _ = g.session.Close() }

// connect is a new MCP client over streamable HTTP speaking protocol, or
// an error.
func (s *soak) connect(ctx context.Context, protocol string) (soakConn, error) {
	if protocol != mcp.ProtocolVersion20251125 {
		return s.connectGoSDK(ctx, protocol)
	}
	c, err := s.connectMCPGo(ctx)
	if err != nil {
		return nil, err
	}
	return mcpGoConn{c}, nil
}

// connectMCPGo is a new mcp-go client in a 2025-11-25 session.
func (s *soak) connectMCPGo(ctx context.Context) (*mcpClient, error) {
	// The transport's own log (a DELETE to a killed server at close)
	// stays out of the report: every failure of a call is counted there.
	c, err := client.NewStreamableHttpClient("http://"+s.addr+"/mcp", transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	ictx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "durawait-soak", Version: "1"}
	res, err := c.Initialize(ictx, req)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20251125 {
		_ = c.Close()
		return nil, fmt.Errorf("mcp-go negotiated %s, want %s", res.ProtocolVersion, mcp.ProtocolVersion20251125)
	}
	return &mcpClient{Client: c, progress: map[string][]float64{}, messages: map[string][]string{}}, nil
}

// connectGoSDK connects the official Go SDK's client, which fails a call
// instead of retrying it (the soak's caller retries, counting).
func (s *soak) connectGoSDK(ctx context.Context, protocol string) (soakConn, error) {
	c := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "durawait-soak-gosdk", Version: goSDKVersion}, nil)
	ictx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	session, err := c.Connect(ictx, &sdkmcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if got := session.InitializeResult().ProtocolVersion; got != protocol {
		_ = session.Close()
		return nil, fmt.Errorf("the official Go SDK negotiated %s, want %s", got, protocol)
	}
	return goSDKConn{session}, nil
}

// soakCaller is one wait's client: it calls again, reconnecting, after
// any failure, as real clients do, and counts each failure by message.
type soakCaller struct {
	s  *soak
	sw *soakWait
	c  soakConn
	// onSend runs once, as the first call is sent.
	onSend  func()
	backoff time.Duration
}

var soakNumbers = regexp.MustCompile(`[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+:[0-9]+|[0-9a-f]{12,}|[0-9]{4,}`)

func (s *soak) countErr(tool, msg string) {
	msg = soakNumbers.ReplaceAllString(msg, "N")
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	s.mu.Lock()
	s.errs[tool+": "+msg]++
	s.mu.Unlock()
}

func (c *soakCaller) close() {
	if c.c != nil {
		c.c.close()
		c.c = nil
	}
}

// retry sleeps before the next attempt: jittered, doubling to 2 s.
func (c *soakCaller) retry() {
	c.backoff = min(max(c.backoff*2, 100*time.Millisecond), 2*time.Second)
	time.Sleep(c.backoff + time.Duration(rand.Intn(100))*time.Millisecond)
}

// once makes one attempt: connected if need be, one call; a failure or
// an isError answer is counted and returned as an error.
func (c *soakCaller) once(tool string, args map[string]any) (*mcp.CallToolResult, error) {
	if c.c == nil {
		cl, err := c.s.connect(context.Background(), c.sw.protocol)
		if err != nil {
			c.s.countErr("connect", err.Error())
			return nil, err
		}
		c.c = cl
	}
	if c.onSend != nil {
		c.onSend()
		c.onSend = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	sent := time.Now()
	res, err := c.c.call(ctx, tool, args)
	cancel()
	note := fmt.Sprintf("%s %s sent, answered %s", tool, sent.Format("15:04:05.000"), time.Now().Format("15:04:05.000"))
	if err != nil {
		note += ": " + err.Error()
	}
	c.sw.calls = append(c.sw.calls, note)
	if err != nil {
		c.s.countErr(tool, err.Error())
		c.close()
		return nil, err
	}
	if res.IsError {
		c.s.countErr(tool+" (isError)", resultText(res))
		return nil, fmt.Errorf("%s", resultText(res))
	}
	c.backoff = 0
	return res, nil
}

// call calls tool until it answers without an error (isError included).
func (c *soakCaller) call(tool string, args map[string]any) *mcp.CallToolResult {
	for {
		if res, err := c.once(tool, args); err == nil {
			return res
		}
		c.retry()
	}
}

// runWait is one wait's client from its first call to its result.
func (s *soak) runWait(sw *soakWait) {
	c := &soakCaller{s: s, sw: sw}
	defer c.close()
	sw.startedAt.Store(time.Now().UnixNano())
	var sent, once sync.Once
	c.onSend = func() { sent.Do(func() { s.inflightStarts.Add(1) }) }
	// started ends the start: for start_agent its answer; wait_for and
	// wait_for_text answer only at their end, so a second after the
	// first call was sent (their workflow is started by then, or the
	// call failed and is made again).
	started := func() {
		sent.Do(func() { s.inflightStarts.Add(1) })
		once.Do(func() { s.inflightStarts.Add(-1) })
	}
	defer started()
	switch sw.kind {
	case kindMatch, kindTimeout:
		s.runWaitFor(c, sw, started)
	case kindAgentOK, kindAgentBlocked:
		s.runAgent(c, sw, started)
	case kindText:
		s.runText(c, sw, started)
	}
}

// soakLoopMargin is how far past max_wait_sec a probe loop's own answer
// can be: it answers within max_wait_sec + 1 s (limits.md). A later
// elapsed time is Temporal's timeout of the loop answered by the workflow
// from the last heartbeat.
const soakLoopMargin = 5 * time.Second

func (s *soak) runWaitFor(c *soakCaller, sw *soakWait, started func()) {
	args := map[string]any{
		"probe":        map[string]any{"tool": "read_file", "args": map[string]any{"path": sw.path(s)}},
		"until":        map[string]any{"matches": "^READY"},
		"poll_sec":     1,
		"max_wait_sec": sw.maxWait,
	}
	sent := c.onSend
	c.onSend = func() {
		sent()
		go func() { time.Sleep(time.Second); started() }()
	}
	res := c.call("wait_for", args)
	var r waitResult
	if err := json.Unmarshal([]byte(resultText(res)), &r); err != nil {
		sw.wrong = "undecodable result: " + resultText(res)
		return
	}
	switch sw.kind {
	case kindMatch:
		// The contract's answer when no probe call of this file was
		// logged from just before the flip to the answer (a window that
		// holds the flip-to-bound one): the storm left no worker up to
		// sample it. Any call in that window makes the timeout wrong,
		// unless the answer came from Temporal's timeout of the loop (its
		// elapsed time is past the bound plus the activity's margin, which
		// no loop reaches): no worker lived to record that call, and the
		// workflow answered from the last heartbeat, as wait_for.md says.
		pending := r.Reason == "timeout" && r.LastObservation == fmt.Sprintf("pending %d", sw.id) && r.ElapsedSec >= float64(sw.maxWait)-0.5
		switch {
		case pending && s.readsBetween(sw, sw.flipLog.Load(), s.callLogSize()) == 0:
			s.mu.Lock()
			s.unsampledTimeouts++
			s.mu.Unlock()
			s.t.Logf("wait %d (wait_for matched) answered timeout with no probe call of its file after its flip: %+v", sw.id, r)
			return
		case pending && r.ElapsedSec > float64(sw.maxWait)+soakLoopMargin.Seconds():
			s.mu.Lock()
			s.serverTimeouts++
			s.mu.Unlock()
			s.t.Logf("wait %d (wait_for matched) answered by Temporal's timeout of its loop from the last heartbeat (no worker finished it): %+v", sw.id, r)
			return
		}
		if r.Reason != "matched" || r.LastObservation != fmt.Sprintf("READY %d", sw.id) {
			sw.wrong = fmt.Sprintf("want matched on %q, got %+v", fmt.Sprintf("READY %d", sw.id), r)
		}
	case kindTimeout:
		pending := fmt.Sprintf("pending %d", sw.id)
		if r.Reason != "timeout" || (r.LastObservation != pending && r.Samples > 0) || r.ElapsedSec < float64(sw.maxWait)-0.5 {
			sw.wrong = fmt.Sprintf("want timeout after %d s on %q, got %+v", sw.maxWait, pending, r)
		}
	}
}

func (s *soak) runAgent(c *soakCaller, sw *soakWait, started func()) {
	provider := "fake"
	if sw.kind == kindAgentBlocked {
		provider = "fakecodex"
	}
	// A request_id makes the call safe to repeat after a cut-off answer.
	args := map[string]any{"provider": provider, "prompt": sw.prompt(), "request_id": fmt.Sprintf("soak-%d-%d", s.knobs.seed, sw.id)}
	id := s.startAgent(c, args)
	started()
	sw.invocation = id
	for {
		res := c.call("wait_agent", map[string]any{"invocation_id": id})
		var p payload
		if err := json.Unmarshal([]byte(resultText(res)), &p); err != nil {
			sw.wrong = "undecodable wait_agent result: " + resultText(res)
			return
		}
		if p.Reason != "finished" {
			continue
		}
		switch sw.kind {
		case kindAgentOK:
			if p.Status != "succeeded" || p.output() != fmt.Sprintf("done %d", sw.id) {
				sw.wrong = fmt.Sprintf("want succeeded with %q, got %s", fmt.Sprintf("done %d", sw.id), resultText(res))
			}
		case kindAgentBlocked:
			if p.Status != "blocked" || p.Error == nil || p.Error.Code != "auth_failed" {
				sw.wrong = "want blocked with auth_failed, got " + resultText(res)
			}
		}
		return
	}
}

// startAgent calls start_agent until it answers. The call carries a
// request_id, so after a call that failed (its answer may have been cut off
// after the invocation started) the identical call is made again: it names
// the same invocation and never starts the CLI twice.
func (s *soak) startAgent(c *soakCaller, args map[string]any) string {
	for repeated := false; ; repeated = true {
		res, err := c.once("start_agent", args)
		if err == nil {
			var p payload
			if err := json.Unmarshal([]byte(resultText(res)), &p); err == nil && strings.HasPrefix(p.InvocationID, "agent/") {
				if repeated {
					s.mu.Lock()
					s.startsRepeated++
					s.mu.Unlock()
				}
				return p.InvocationID
			}
			s.countErr("start_agent", "undecodable answer: "+resultText(res))
		}
		c.retry()
	}
}

func (s *soak) runText(c *soakCaller, sw *soakWait, started func()) {
	sent := c.onSend
	c.onSend = func() {
		sent()
		go func() { time.Sleep(time.Second); started() }()
	}
	res := c.call("wait_for_text", map[string]any{
		"target": map[string]any{"paneId": s.pane.PaneID, "generation": s.pane.Generation}, "text": sw.text(),
	})
	var r textResult
	if err := json.Unmarshal([]byte(resultText(res)), &r); err != nil {
		sw.wrong = "undecodable result: " + resultText(res)
		return
	}
	if !r.Matched || r.Text != sw.text() {
		sw.wrong = fmt.Sprintf("want matched %q, got %s", sw.text(), resultText(res))
	}
}

// verify checks every wait against its plan, the engine's record of the
// workflows (each closed, none left open) and the fake agent's own record
// of its runs, and logs the report.
func (s *soak) verify() {
	t := s.t
	wall := time.Since(s.began)
	byKind := map[soakKind]int{}
	s.rightByProtocol = map[string]int{}
	wrong, lost := 0, 0
	for _, sw := range s.waits {
		switch {
		case !sw.done.Load():
			lost++
			t.Errorf("lost: wait %d (%s) never finished", sw.id, sw.kind)
		case sw.wrong != "":
			wrong++
			t.Errorf("wrong: wait %d (%s): %s", sw.id, sw.kind, sw.wrong)
		default:
			byKind[sw.kind]++
			s.rightByProtocol[sw.protocol]++
		}
	}
	// Waits 0-4 and 5-9 speak one era each, every planned outcome: both
	// eras must have carried waits to their right answer.
	if len(s.waits) >= len(soakProtocols)*int(soakKinds) {
		for _, p := range soakProtocols {
			assert.Positive(t, s.rightByProtocol[p], "no wait of a client speaking %s finished right", p)
		}
	}
	runs := s.workflowRuns()
	twice := s.checkRuns(runs)
	s.explainReruns(runs)
	s.report(wall, byKind, wrong, twice, lost, runs)
}

// wfRuns are the engine's runs of one workflow type: per workflow ID, the
// closed runs and the open ones; for agents, the prompt of each ID.
type wfRuns struct {
	closed, open map[string]int
	prompt       map[string]string
}

func (s *soak) workflowRuns() map[string]*wfRuns {
	t := s.t
	tc := temporalClient(t, s.w.owner().Engine)
	out := map[string]*wfRuns{}
	for _, typ := range []string{workflows.WaitForWorkflowName, workflows.WaitForTextWorkflowName, workflows.AgentWorkflowName} {
		var r *wfRuns
		// Visibility trails the closes a little: wait until no run of
		// ours is listed open, or the limit passes.
		deadline := time.Now().Add(30 * time.Second)
		for {
			r = &wfRuns{closed: map[string]int{}, open: map[string]int{}, prompt: map[string]string{}}
			var token []byte
			for {
				resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
					Query: fmt.Sprintf("WorkflowType = '%s'", typ), NextPageToken: token, PageSize: 1000,
				})
				require.NoError(t, err)
				for _, e := range resp.Executions {
					id := e.Execution.WorkflowId
					if e.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
						r.open[id]++
					} else {
						r.closed[id]++
					}
					if p, ok := e.GetMemo().GetFields()["prompt"]; ok {
						var str string
						if converter.GetDefaultDataConverter().FromPayload(p, &str) == nil {
							r.prompt[id] = str
						}
					}
				}
				token = resp.NextPageToken
				if len(token) == 0 {
					break
				}
			}
			if len(r.open) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		out[typ] = r
	}
	return out
}

// checkRuns counts what ran twice: an agent CLI run more often than its
// invocations (the fake agent's argv log), and asserts that no workflow
// is left open and every wait has a closed workflow.
func (s *soak) checkRuns(runs map[string]*wfRuns) int {
	t := s.t
	twice := 0
	tc := temporalClient(t, s.w.owner().Engine)
	for typ, r := range runs {
		for id, n := range r.open {
			if s.settleOpen(tc, typ, id) {
				// History closed it: count it with the closed ones.
				delete(r.open, id)
				r.closed[id] += n
			}
		}
	}
	want := map[string]int{}
	for _, sw := range s.waits {
		switch sw.kind {
		case kindMatch, kindTimeout:
			want[workflows.WaitForWorkflowName]++
		case kindText:
			want[workflows.WaitForTextWorkflowName]++
		}
	}
	for _, typ := range []string{workflows.WaitForWorkflowName, workflows.WaitForTextWorkflowName} {
		// Each planned wait has its own arguments, so its own workflow ID.
		assert.Equal(t, want[typ], len(runs[typ].closed), "%s: one workflow ID closed per planned wait", typ)
	}
	// The fake agent CLI's own record: one run per invocation.
	cliRuns := map[string]int{}
	for _, line := range strings.Split(readFile(s.w.path("argv.log")), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			cliRuns[f[len(f)-1]]++
		}
	}
	invocations := map[string]int{}
	for id, prompt := range runs[workflows.AgentWorkflowName].prompt {
		if runs[workflows.AgentWorkflowName].closed[id] > 0 {
			invocations[prompt]++
		}
	}
	for _, sw := range s.waits {
		if sw.kind != kindAgentOK && sw.kind != kindAgentBlocked {
			continue
		}
		p := sw.prompt()
		// None twice; a wait whose CLI never ran is already wrong (its
		// planned output is missing), so it is not counted here again.
		if invocations[p] > 1 || cliRuns[p] > 1 {
			twice++
			t.Errorf("agent wait %d: %d invocations with prompt %s and %d runs of its CLI, want one of each", sw.id, invocations[p], p, cliRuns[p])
		}
		if cliRuns[p] == 0 && sw.wrong == "" {
			t.Errorf("agent wait %d: its CLI never ran, yet its result was right", sw.id)
		}
	}
	return twice
}

// openSettleLimit bounds how long the judge waits, after every client had
// its answer, for a run the engine still lists open: an answer delivered
// in process (the probe loop's observer) can precede its run's close by a
// kill, and the run closes once a restarted worker re-runs its activity
// (after the heartbeat timeout), within the wait's 300 s cap.
const openSettleLimit = 6 * time.Minute

// settleOpen waits, up to openSettleLimit from the first call, for the
// history of workflow id (listed open by visibility) to close, and reports
// whether it did. Either way it logs what the history says and the client
// calls of its wait, so a run left open is explained, not just counted.
func (s *soak) settleOpen(tc sdkclient.Client, typ, id string) bool {
	if s.settleFrom.IsZero() {
		s.settleFrom = time.Now()
	}
	var desc *workflowservice.DescribeWorkflowExecutionResponse
	for {
		d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		if err == nil {
			desc = d
			if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				break
			}
		}
		if time.Since(s.settleFrom) > openSettleLimit {
			break
		}
		time.Sleep(2 * time.Second)
	}
	info := desc.GetWorkflowExecutionInfo()
	what := fmt.Sprintf("%s %s: history says %s, started %s, %d events", typ, id, info.GetStatus(),
		info.GetStartTime().AsTime().Local().Format("15:04:05.000"), info.GetHistoryLength())
	if ct := info.GetCloseTime(); ct != nil {
		what += ", closed " + ct.AsTime().Local().Format("15:04:05.000")
	}
	for _, a := range desc.GetPendingActivities() {
		what += fmt.Sprintf("; pending %s attempt %d %s, last heartbeat %s, last failure %q", a.GetActivityType().GetName(),
			a.GetAttempt(), a.GetState(), a.GetLastHeartbeatTime().AsTime().Local().Format("15:04:05.000"), a.GetLastFailure().GetMessage())
	}
	lines, sw := s.runsOf(tc, id)
	closed := desc != nil && info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	client := "no wait matches its input"
	if sw != nil {
		client = fmt.Sprintf("wait %d (%s), client: %s", sw.id, sw.kind, strings.Join(sw.calls, "\n          "))
	}
	switch {
	case closed && info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		s.lateCloses++
		s.t.Logf("closed after its client's answer: %s\n  %s\n  %s", what, strings.Join(lines, "\n  "), client)
	case closed:
		s.t.Errorf("closed, but not completed, after its client's answer: %s\n  %s\n  %s", what, strings.Join(lines, "\n  "), client)
	default:
		s.t.Errorf("still open %s after every client had its result: %s\n  %s\n  %s",
			time.Since(s.settleFrom).Round(time.Second), what, strings.Join(lines, "\n  "), client)
	}
	return closed
}

// runsOf lists the runs of workflow id (visibility) and finds the planned
// wait its input names (nil: none).
func (s *soak) runsOf(tc sdkclient.Client, id string) ([]string, *soakWait) {
	resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", id),
	})
	if err != nil {
		return []string{"list runs: " + err.Error()}, nil
	}
	var lines []string
	input := ""
	for _, e := range resp.Executions {
		lines = append(lines, fmt.Sprintf("run %s started %s closed %s %s", e.Execution.RunId[:8],
			e.StartTime.AsTime().Local().Format("15:04:05.000"), e.CloseTime.AsTime().Local().Format("15:04:05.000"), e.Status))
		it := tc.GetWorkflowHistory(context.Background(), id, e.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if ev, err := it.Next(); err == nil {
			for _, p := range ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
				input = string(p.GetData())
			}
		}
	}
	for _, w := range s.waits {
		if (w.kind == kindText && strings.Contains(input, w.text())) ||
			((w.kind == kindMatch || w.kind == kindTimeout) && strings.Contains(input, fmt.Sprintf("probe/w%d\"", w.id))) {
			return lines, w
		}
	}
	return append(lines, "input "+input), nil
}

// explainReruns logs, for each wait whose workflow ID has more than one
// run, the runs and the client's calls, next to the kills.
func (s *soak) explainReruns(runs map[string]*wfRuns) {
	tc := temporalClient(s.t, s.w.owner().Engine)
	var kills []string
	for _, k := range s.killTimes {
		kills = append(kills, k.Format("15:04:05.000"))
	}
	logged := 0
	for _, typ := range []string{workflows.WaitForWorkflowName, workflows.WaitForTextWorkflowName} {
		for id, n := range runs[typ].closed {
			if n < 2 {
				continue
			}
			logged++
			if logged > 5 {
				continue
			}
			lines, sw := s.runsOf(tc, id)
			if sw == nil {
				s.t.Logf("rerun %s %s: %s", typ, id, strings.Join(lines, "; "))
				continue
			}
			s.t.Logf("rerun: wait %d (%s), %s:\n  %s\n  client: %s\n  kills: %s", sw.id, sw.kind, id,
				strings.Join(lines, "\n  "), strings.Join(sw.calls, "\n          "), strings.Join(kills, " "))
		}
	}
}

func (s *soak) report(wall time.Duration, byKind map[soakKind]int, wrong, twice, lost int, runs map[string]*wfRuns) {
	var b strings.Builder
	fmt.Fprintf(&b, "soak report (seed %d)\n", s.knobs.seed)
	fmt.Fprintf(&b, "  N (waits in flight)         %d\n", s.knobs.waits)
	fmt.Fprintf(&b, "  M (kills of durawait)       %d of %d", s.killsDone, s.knobs.kills)
	if s.budgetHit {
		fmt.Fprintf(&b, " (DURAWAIT_SOAK_BUDGET %s reached)", s.knobs.budget)
	}
	b.WriteString("\n")
	for _, k := range sortedKeys(s.killsByKind) {
		fmt.Fprintf(&b, "    %-44s %d\n", k, s.killsByKind[k])
	}
	fmt.Fprintf(&b, "  mid-start: first calls in flight at the kill  p50 %d, max %d\n", p50i(s.midStartInFlight), maxi(s.midStartInFlight))
	fmt.Fprintf(&b, "  mid-result: flipped waits undelivered at the kill  p50 %d, max %d\n", p50i(s.midResultPending), maxi(s.midResultPending))
	fmt.Fprintf(&b, "  downstream probe server kills %d\n", s.downstreamKills)
	fmt.Fprintf(&b, "  start_agent calls answered when repeated with their request_id after a failed call %d\n", s.startsRepeated)
	fmt.Fprintf(&b, "  runs listed open after every answer that then closed (answered in process, then a kill) %d\n", s.lateCloses)
	fmt.Fprintf(&b, "  wait_for flipped but answered timeout, no probe call of it between flip and bound (the contract's answer) %d\n", s.unsampledTimeouts)
	fmt.Fprintf(&b, "  wait_for flipped but answered timeout by Temporal's timeout of its loop, from the last heartbeat (the contract's answer) %d\n", s.serverTimeouts)
	total := 0
	for k := soakKind(0); k < soakKinds; k++ {
		fmt.Fprintf(&b, "  finished right: %-22s %d\n", k, byKind[k])
		total += byKind[k]
	}
	fmt.Fprintf(&b, "  waits planned %d, finished right %d\n", len(s.waits), total)
	fmt.Fprintf(&b, "  finished right by protocol: %s %d (mcp-go, sessions), %s %d (official Go SDK, stateless)\n",
		soakProtocols[0], s.rightByProtocol[soakProtocols[0]], soakProtocols[1], s.rightByProtocol[soakProtocols[1]])
	fmt.Fprintf(&b, "  wrong %d, twice %d, lost %d\n", wrong, twice, lost)
	for _, typ := range []string{workflows.WaitForWorkflowName, workflows.WaitForTextWorkflowName} {
		r := runs[typ]
		extra := 0
		for _, n := range r.closed {
			extra += n - 1
		}
		fmt.Fprintf(&b, "  %s workflows: %d IDs closed, %d more runs (an identical call after a close whose answer the kill cut off starts anew)\n", typ, len(r.closed), extra)
	}
	fmt.Fprintf(&b, "  wall time %s\n", time.Since(s.began).Round(time.Second))
	fmt.Fprintf(&b, "  restart -> /healthz 200  p50 %s, max %s (%d starts)\n", p50d(s.healthz), maxd(s.healthz), len(s.healthz))
	fmt.Fprintf(&b, "  kill -> probes sampling again  p50 %s, max %s (%d measured; %d kills came before sampling resumed)\n",
		p50d(s.recovery), maxd(s.recovery), len(s.recovery), s.notRecovered)
	fmt.Fprintf(&b, "  durawait exits during start-up (started again): %d\n", sumValues(s.startFailures))
	for _, k := range sortedKeys(s.startFailures) {
		fmt.Fprintf(&b, "    %d x %s\n", s.startFailures[k], k)
	}
	b.WriteString("  client call failures (each retried), by message:\n")
	errKeys := sortedKeys(s.errs)
	sort.SliceStable(errKeys, func(i, j int) bool { return s.errs[errKeys[i]] > s.errs[errKeys[j]] })
	for _, k := range errKeys {
		fmt.Fprintf(&b, "    %6d  %s\n", s.errs[k], k)
	}
	s.t.Log(b.String())
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func p50d(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

func maxd(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return slices.Max(d).Round(time.Millisecond)
}

func p50i(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func maxi(v []int) int {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}
