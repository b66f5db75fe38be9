package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
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
	"github.com/stretchr/testify/require"
)

// The crash soak (issue 12, "A thousand crashes"): N waits of all three
// kinds in flight against one `durawait serve`, which is killed with
// SIGKILL M times at random moments (among them mid-start and mid-result)
// and restarted, every client calling again after each crash; the
// downstream probe server is killed at random too, and durawait is stopped
// (SIGSTOP, then SIGCONT) for the stalls asked. Each wait's outcome is
// planned up front; the soak records what it did and what it saw, and its
// judge (soak_judge_test.go) holds every answer, every run of every wait
// in the engine and every failed call to the contract. docs/soak.md
// describes it; `make soak` runs the big one (DURAWAIT_SOAK_WAITS=200,
// DURAWAIT_SOAK_KILLS=1000, stalls of 5, 30 and 120 s), `make test` this
// small default.
func TestSoakCrashes(t *testing.T) {
	v := runSoak(t, soakKnobsFromEnv(t), bin.durawait)
	t.Log(v.report)
	for _, f := range v.failures {
		t.Errorf("%s", f)
	}
}

// runSoak runs the soak against the durawait binary and returns the
// judge's verdict. The soak's own machinery failing (a tmux command, the
// engine unreachable) fails t; what durawait did is only in the verdict,
// so a test can run the soak expecting it to fail.
func runSoak(t *testing.T, knobs soakKnobs, durawait string) soakVerdict {
	s := newSoak(t, knobs, durawait)
	if keep := os.Getenv("DURAWAIT_SOAK_LOG"); keep != "" {
		// durawait's output over all its starts, kept past the test's
		// temp dir for whoever reads the failures (also when the soak's
		// own machinery failed: cleanups run before the temp dir goes).
		t.Cleanup(func() {
			if err := copyFile(s.w.path("durawait.log"), keep); err != nil {
				t.Logf("could not keep durawait's log: %v", err)
			}
		})
	}
	s.run()
	return s.judge()
}

// copyFile copies the file at from to to.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// soakKnobs are the soak's size and randomness.
type soakKnobs struct {
	waits, kills int
	seed         int64
	// budget, when set, stops the kills early (the summary says so).
	budget time.Duration
	// stalls are the SIGSTOPs of durawait, each this long, spread over the
	// kill cycles.
	stalls []time.Duration
	// matchMaxWait is the max_wait_sec of a wait_for whose file flips;
	// 0 is flippedMaxWait's default.
	matchMaxWait int
	// tmuxCrashes are the kills of the soak's tmux server, spread over
	// the kill cycles (soak_tmux_test.go).
	tmuxCrashes int
}

// Defaults of the knobs the environment does not set. A flipped
// wait_for's bound is long enough that no storm reaches it: 240 s in the
// big soak, whose storms last an hour; 60 s in one of at most
// smallSoakKills kills, whose storm is over within a minute (so a wait
// wrongly left to its bound answers within the test's time: see
// TestSoakJudgeFailsAnInjectedFault).
const (
	bigSoakMatchMaxWait   = 240
	smallSoakMatchMaxWait = 60
	smallSoakKills        = 20
)

// defaultSoakKnobs are the small soak of make test: N = 12, M = 6, one
// 5 s stall, one crash of the tmux server.
func defaultSoakKnobs() soakKnobs {
	return soakKnobs{waits: 12, kills: 6, seed: time.Now().UnixNano(), stalls: []time.Duration{5 * time.Second}, tmuxCrashes: 1}
}

// soakKnobsFromEnv are the knobs the environment sets, on top of the
// defaults.
func soakKnobsFromEnv(t *testing.T) soakKnobs {
	k := defaultSoakKnobs()
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
	if v := os.Getenv("DURAWAIT_SOAK_STALLS"); v != "" {
		k.stalls = nil
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" || f == "none" {
				continue
			}
			d, err := time.ParseDuration(f)
			require.NoError(t, err, "DURAWAIT_SOAK_STALLS")
			k.stalls = append(k.stalls, d)
		}
	}
	envInt("DURAWAIT_SOAK_MATCH_MAX_WAIT", &k.matchMaxWait)
	envInt("DURAWAIT_SOAK_TMUX_CRASHES", &k.tmuxCrashes)
	return k
}

// flippedMaxWait is the bound of a wait_for whose file flips.
func (k soakKnobs) flippedMaxWait() int {
	switch {
	case k.matchMaxWait > 0:
		return k.matchMaxWait
	case k.kills <= smallSoakKills:
		return smallSoakMatchMaxWait
	}
	return bigSoakMatchMaxWait
}

// soakKind is what a wait waits for and how it is planned to end.
type soakKind int

const (
	kindMatch        soakKind = iota // wait_for, matched after its flip
	kindTimeout                      // wait_for that never flips: timeout
	kindAgentOK                      // start_agent/wait_agent: succeeded with its output
	kindAgentBlocked                 // start_agent/wait_agent: blocked (auth_failed)
	kindText                         // wait_for_text: matched after its text is printed
	kindEvent                        // wait_for_event: posted, by POST /hooks/{name} after its flip
	soakKinds
)

func (k soakKind) String() string {
	return [...]string{"wait_for matched", "wait_for timeout", "agent succeeded", "agent blocked", "wait_for_text matched", "wait_for_event posted"}[k]
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
	// flipAt is when the wait's condition was made true (unix ns, taken
	// just before the file was written, the release file made or the
	// keys typed); 0 while not flipped.
	flipAt atomic.Int64
	// appearedAt is, for wait_for_text, when the soak saw the text in the
	// pane after typing its printf (unix ns): the text was printed
	// between flipAt and appearedAt.
	appearedAt atomic.Int64
	// postedAt is, for wait_for_event, when the hook took its post (unix
	// ns): the post was kept between flipAt and postedAt.
	postedAt atomic.Int64
	done     atomic.Bool

	mu         sync.Mutex
	invocation string // the agent invocation the client waited on
	// target is the pane a wait_for_text waits on: the soak's pane when
	// it made its first call.
	target paneInfo
	// calls are the client's calls, with their time and failure, for the
	// judge's evidence.
	calls []string
	// answer is the client's final answer (the text of the result), and
	// when the call that got it was sent and answered.
	answer               string
	answerSent, answerAt time.Time
}

// setAnswer records the client's final answer.
func (sw *soakWait) setAnswer(text string, sent, at time.Time) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.answer, sw.answerSent, sw.answerAt = text, sent, at
}

// note records one of the client's calls.
func (sw *soakWait) note(call string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.calls = append(sw.calls, call)
}

// callLog is the client's calls, one a line, for evidence.
func (sw *soakWait) callLog() string {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return strings.Join(sw.calls, "\n          ")
}

func nsTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (sw *soakWait) path(s *soak) string { return s.w.path(fmt.Sprintf("probe/w%d", sw.id)) }
func (sw *soakWait) prompt() string {
	if sw.kind == kindAgentBlocked {
		return fmt.Sprintf("bl%d", sw.id)
	}
	return fmt.Sprintf("ok%d", sw.id)
}
func (sw *soakWait) text() string { return fmt.Sprintf("SOAK%dZ", sw.id) }

// event is the name of a wait_for_event's event, and payload its post.
func (sw *soakWait) event() string   { return fmt.Sprintf("soak-ev-%d", sw.id) }
func (sw *soakWait) payload() string { return fmt.Sprintf(`{"id":%d}`, sw.id) }

// soak is one run: the workspace, the server, the population of waits and
// the figures of the report.
type soak struct {
	t        *testing.T
	knobs    soakKnobs
	durawait string     // the binary under test
	rng      *rand.Rand // the kill loop's only: plans, moments, choices
	w        *tmuxWorld
	addr     string
	srv      *soakServer

	// tmuxMu guards lives: the soak's tmux server's lives, the running
	// one last (soak_tmux_test.go).
	tmuxMu sync.Mutex
	lives  []*soakTmuxLife

	typing sync.Mutex // one line typed into the pane at a time

	mu      sync.Mutex
	waits   []*soakWait
	pending int // finished waits not yet replaced
	errs    map[string]int
	// failures are every failed client call (and connect), for the judge.
	failures []soakCallFailure
	wg       sync.WaitGroup

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
	// startExits are durawait's exits during start-up, each with its last
	// log lines: every one fails the run.
	startExits []string
	// downs are the stretches in which no durawait process was up and
	// running: from just before each kill (or the first start) to the
	// /healthz 200 after the restart, and each stall from just before its
	// SIGSTOP to just after its SIGCONT. downFrom is the start of the
	// stretch in progress (zero while durawait is up).
	downs    []soakDown
	downFrom time.Time
	stalls   []soakStall
	// settleFrom is when the judge began waiting for runs still open to
	// close.
	settleFrom time.Time
	cleanup    sync.Once
}

// soakDown is a stretch in which no durawait process was up and running.
type soakDown struct {
	from, to time.Time
	what     string // "kill 3", "stall 1 (30s)", "first start"
}

// soakStall is one SIGSTOP of durawait: when it was stopped and continued,
// and which kinds of waits were open then.
type soakStall struct {
	d        time.Duration
	from, to time.Time
	open     map[string]int // open waits by family (wait_for, wait_for_text, agent) at the SIGSTOP
	flipped  int            // waits flipped during the stall by the stall itself
}

// soakCallFailure is one failed client call: a transport error, an
// isError answer, or a failed connect (tool "connect"). The judge sorts
// each into the classes the contract tells a client to retry, or not.
type soakCallFailure struct {
	wait *soakWait
	tool string
	// conn is when the caller's connection (its MCP session or client) was
	// made; sent and failed when the call went out and failed.
	conn, sent, failed time.Time
	msg                string
	isError            bool
}

func newSoak(t *testing.T, knobs soakKnobs, durawait string) *soak {
	w := newWorkspace(t)
	require.NoError(t, os.MkdirAll(w.path("probe"), 0o755))
	tw := newTmuxWorldIn(w, 300, "\n"+agentsTOML(w, 20))
	s := &soak{
		t: t, knobs: knobs, durawait: durawait, rng: rand.New(rand.NewSource(knobs.seed)), w: tw, addr: freeAddr(t),
		errs: map[string]int{}, killsByKind: map[string]int{},
	}
	t.Logf("soak: N=%d waits, M=%d kills, stalls %v, flipped wait_for bound %d s, seed %d (DURAWAIT_SOAK_SEED=%d replays it); durawait %s",
		knobs.waits, knobs.kills, knobs.stalls, knobs.flippedMaxWait(), knobs.seed, knobs.seed, durawait)
	return s
}

// soakServer is the one `durawait serve` of the soak, restarted after each
// kill on the same address and data dir; its output goes to a file.
type soakServer struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startServer starts durawait and waits for /healthz 200. A durawait that
// exits during start-up fails the run (the judge quotes its last log
// lines); it is started again, as a supervisor would, so that the rest of
// the run can still be judged, but five exits in a row end the soak.
func (s *soak) startServer() {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		failure := s.tryStart()
		if failure == "" {
			s.downs = append(s.downs, soakDown{from: s.downFrom, to: time.Now(), what: s.downWhat()})
			s.downFrom = time.Time{}
			return
		}
		s.startExits = append(s.startExits, failure)
		s.t.Logf("soak: durawait exited during start-up (attempt %d): %s", attempt, failure)
		require.Less(s.t, attempt, 5, "durawait failed to start five times in a row; see the lines above")
	}
}

// downWhat names the stretch that a start ends.
func (s *soak) downWhat() string {
	if len(s.killTimes) == 0 {
		return "first start"
	}
	return fmt.Sprintf("kill %d", len(s.killTimes))
}

// tryStart starts durawait once; it answers "" once /healthz is 200, or
// the last error lines of a durawait that exited during start-up.
func (s *soak) tryStart() string {
	s.t.Helper()
	logf, err := os.OpenFile(s.w.path("durawait.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	fmt.Fprintf(logf, "=== soak: start %d at %s\n", len(s.healthz), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.durawait, serveArgs(s.w.config, s.addr)...)
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

// killServer kills durawait with SIGKILL, as a crash would. The kill's
// time is taken before the signal, so the judge's record of when durawait
// was down holds the whole of it.
func (s *soak) killServer() {
	s.markKill()
	at := time.Now()
	if s.downFrom.IsZero() {
		s.downFrom = at
	}
	_ = s.srv.cmd.Process.Signal(syscall.SIGKILL)
	<-s.srv.done
	s.killTimes = append(s.killTimes, at)
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
	s.downFrom = s.began
	s.startServer()
	c, err := s.connectMCPGo(context.Background())
	require.NoError(s.t, err)
	require.NoError(s.t, s.firstTmuxLife(listPanes(s.t, c)[0]))
	_ = c.Close()

	stopFlips := make(chan struct{})
	flipsDone := make(chan struct{})
	go func() { defer close(flipsDone); s.flipper(stopFlips) }()
	stopTmuxWatch := make(chan struct{})
	tmuxWatchDone := make(chan struct{})
	go func() { defer close(tmuxWatchDone); s.watchTmux(stopTmuxWatch) }()
	defer func() { close(stopTmuxWatch); <-tmuxWatchDone }()

	s.launch(s.knobs.waits)
	stallsAt := s.stallSchedule()
	for i := 0; i < s.knobs.kills; i++ {
		if s.knobs.budget > 0 && time.Since(s.began) > s.knobs.budget {
			s.budgetHit = true
			break
		}
		if s.tmuxCrashDue(i) {
			s.crashTmux()
		}
		for _, d := range stallsAt[i] {
			s.stallCycle(d)
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
	case <-time.After(soakLostAfter):
		s.t.Logf("soak: waits still unfinished %s after the last kill (lost): %s", soakLostAfter, s.progress())
	}
	close(stopFlips)
	<-flipsDone
}

// soakLostAfter is how long after the last kill every client must have
// its answer; a wait without one is lost.
const soakLostAfter = 6 * time.Minute

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
	if i%10 == 9 { // a longer quiet spell: the lease (2 s) lapses and is taken back, resumed loops move on
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

// stallSchedule spreads the stalls evenly over the kill cycles: the
// stalls to make before each cycle's kill, by cycle.
func (s *soak) stallSchedule() map[int][]time.Duration {
	at := map[int][]time.Duration{}
	n := len(s.knobs.stalls)
	for j, d := range s.knobs.stalls {
		i := (j + 1) * s.knobs.kills / (n + 1)
		at[i] = append(at[i], d)
	}
	return at
}

// soakFamily is the tool family of a kind: what "waits of all three kinds
// open" counts.
func soakFamily(k soakKind) string {
	switch k {
	case kindMatch, kindTimeout:
		return "wait_for"
	case kindText:
		return "wait_for_text"
	case kindEvent:
		return "wait_for_event"
	}
	return "agent"
}

// openByFamily counts the waits whose first call went out and whose
// client has no answer yet, by family.
func (s *soak) openByFamily() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := map[string]int{}
	for _, sw := range s.waits {
		if sw.startedAt.Load() != 0 && !sw.done.Load() {
			open[soakFamily(sw.kind)]++
		}
	}
	return open
}

// stallCycle stops durawait (SIGSTOP) for d with waits of all three kinds
// open, flips a few of them while it is stopped (their answers are due
// during the stall), then lets it go on (SIGCONT). An agent CLI must live
// through it, every wait must still end right, and the judge reports how
// soon after the SIGCONT the due answers came.
func (s *soak) stallCycle(d time.Duration) {
	if len(s.downs) > 0 {
		// A running durawait is paused, not one still coming back from
		// the kill (or stall) before: the kills measure that recovery.
		s.gap(time.Until(s.downs[len(s.downs)-1].to.Add(stallSettle)))
	}
	// The waits that ended meanwhile are replaced, so that waits of all
	// three kinds are open when it stops (the kill cycles refill too).
	s.refill()
	s.gap(time.Duration(200+s.rng.Intn(1800)) * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for open := s.openByFamily(); len(open) < 3 && time.Now().Before(deadline); open = s.openByFamily() {
		s.gap(50 * time.Millisecond)
	}
	quota := map[soakKind]int{kindMatch: 2, kindText: 2, kindAgentOK: 1, kindAgentBlocked: 1, kindEvent: 1}
	var picked []*soakWait
	s.mu.Lock()
	for _, sw := range s.waits {
		if quota[sw.kind] > 0 && sw.startedAt.Load() != 0 && !sw.flipped.Load() && !sw.done.Load() {
			quota[sw.kind]--
			if sw.kind == kindAgentOK || sw.kind == kindAgentBlocked {
				// one agent released; the others stay running through the stall
				quota[kindAgentOK], quota[kindAgentBlocked] = 0, 0
			}
			picked = append(picked, sw)
		}
	}
	s.mu.Unlock()
	st := soakStall{d: d, open: s.openByFamily(), flipped: len(picked)}
	st.from = time.Now()
	require.NoError(s.t, s.srv.cmd.Process.Signal(syscall.SIGSTOP))
	s.gap(min(time.Second, d/2))
	for _, sw := range picked {
		s.flip(sw)
	}
	s.gap(time.Until(st.from.Add(d)))
	require.NoError(s.t, s.srv.cmd.Process.Signal(syscall.SIGCONT))
	st.to = time.Now()
	s.stalls = append(s.stalls, st)
	s.downs = append(s.downs, soakDown{from: st.from, to: st.to, what: fmt.Sprintf("stall %d (%s)", len(s.stalls), d)})
	s.t.Logf("soak: stall %d: durawait stopped %s with %v open, %d flipped meanwhile", len(s.stalls), d, st.open, st.flipped)
	s.gap(stallAftermath)
}

// stallSettle is how long durawait has run since its last restart before
// a stall begins (the recovery target after a kill: by then every wait
// samples again and its caller has called again), so that a stall's
// figures say how soon a paused durawait answers what came due, not how
// soon one still recovering from a kill does.
const stallSettle = soakRecoveryTarget

// stallAftermath is how long durawait runs on after a SIGCONT before the
// next kill: the engine's timers that came due while it was stopped (the
// host's lease, 2 s here, has lapsed) fire at once, and what follows (the
// lease offered for adoption, the host taking it back) must happen before
// a kill would wipe it out.
const stallAftermath = 15 * time.Second

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
	weights := []int{25, 15, 20, 10, 20, 10} // by soakKind
	r := s.rng.Intn(100)
	kind := soakKind(0)
	for r >= weights[kind] {
		r -= weights[kind]
		kind++
	}
	if id < int(soakKinds) {
		kind = soakKind(id) // the first waits cover every planned outcome, whatever the seed
	}
	sw := &soakWait{id: id, kind: kind, maxWait: s.knobs.flippedMaxWait(),
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
	if sw.kind == kindText {
		// The time is taken once it is this flip's turn to type.
		s.typing.Lock()
		defer s.typing.Unlock()
	}
	sw.flipAt.Store(time.Now().UnixNano())
	switch sw.kind {
	case kindMatch:
		if err := os.WriteFile(sw.path(s), []byte(fmt.Sprintf("READY %d", sw.id)), 0o644); err != nil {
			s.t.Errorf("flip %d: %v", sw.id, err)
		}
	case kindAgentOK, kindAgentBlocked:
		if err := os.WriteFile(s.w.path(fmt.Sprintf("scripts/go%d", sw.id)), nil, 0o644); err != nil {
			s.t.Errorf("flip %d: %v", sw.id, err)
		}
	case kindText:
		s.typeText(sw)
	case kindEvent:
		// The post goes out whatever durawait's state, and is delivered
		// again (the same delivery ID: one post) until the hook takes it.
		go s.postEvent(sw)
	}
}

// postEvent posts sw's event as a CI system would (POST /hooks/{name},
// its delivery ID in Idempotency-Key), again and again until the hook
// answers 200, and notes when it did.
func (s *soak) postEvent(sw *soakWait) {
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/hooks/"+sw.event(), strings.NewReader(sw.payload()))
		if err != nil {
			s.t.Errorf("flip %d: %v", sw.id, err)
			return
		}
		req.Header.Set("Idempotency-Key", sw.event())
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				sw.postedAt.Store(time.Now().UnixNano())
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// typeText prints the text of sw in its pane, unless the pane died with
// its tmux server: then nothing is printed in it, flipAt is cleared, and
// the wait answers a pane error the judge holds to that death. The keys
// count as typed (flipAt kept) only when the server of its pane took them:
// the same tmux invocation prints the pid of the server it reached.
func (s *soak) typeText(sw *soakWait) {
	sw.mu.Lock()
	pane := sw.target
	sw.mu.Unlock()
	lastAlive, _, gone := s.paneGone(pane)
	if gone {
		sw.flipAt.Store(0)
		return
	}
	// The command line typed does not hold the text; its output does.
	cmd, cancel := s.tmuxCommand("send-keys", "-t", pane.PaneID, "-l", fmt.Sprintf("printf '%%s%%s\\n' SOAK %dZ", sw.id),
		";", "send-keys", "-t", pane.PaneID, "Enter", ";", "display-message", "-p", "#{pid}")
	out, err := cmd.CombinedOutput()
	cancel()
	if pid := s.lifePID(pane); err != nil || strings.TrimSpace(string(out)) != strconv.Itoa(pid) {
		sw.flipAt.Store(0)
		if !s.paneDies(pane) {
			s.t.Errorf("flip %d: tmux (server of pane %s: pid %d, last seen running %s): %v: %s", sw.id, pane.PaneID, pid, clock(lastAlive), err, out)
		}
		return
	}
	s.notePrinted(sw, pane)
}

// paneDies says whether the server of pane is found gone within a few of
// the soak's checks (a tmux command failed: was it the server's death?).
func (s *soak) paneDies(pane paneInfo) bool {
	deadline := time.Now().Add(5 * soakTmuxCheck)
	for {
		if _, _, gone := s.paneGone(pane); gone {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(soakTmuxCheck / 4)
	}
}

// notePrinted records when the text of sw is in the pane: the shell ran
// the printf between the flip and then.
func (s *soak) notePrinted(sw *soakWait, pane paneInfo) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command("tmux", "-S", s.w.socket, "capture-pane", "-p", "-J", "-S", "-50", "-t", pane.PaneID).Output()
		if err == nil && strings.Contains(string(out), sw.text()) {
			sw.appearedAt.Store(time.Now().UnixNano())
			return
		}
		if _, _, gone := s.paneGone(pane); gone {
			return // the judge holds the wait's answer to the death
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Errorf("flip %d: %s not in the pane 10 s after its printf was typed", sw.id, sw.text())
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
// any failure, as real clients do, and records each failure for the judge.
type soakCaller struct {
	s  *soak
	sw *soakWait
	c  soakConn
	// connected is when c was made.
	connected time.Time
	// onSend runs once, as the first call is sent.
	onSend  func()
	backoff time.Duration
	// sent and answered are the times of the last call that succeeded.
	sent, answered time.Time
}

var soakNumbers = regexp.MustCompile(`[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+:[0-9]+|[0-9a-f]{12,}|[0-9]{4,}`)

// soakMessage is a failure's message with its numbers, addresses and IDs
// replaced by N, cut to 160 characters: failures of one kind read alike.
func soakMessage(msg string) string {
	msg = soakNumbers.ReplaceAllString(msg, "N")
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return msg
}

// recordFailure keeps a failed call for the judge and counts it by
// message for the report.
func (s *soak) recordFailure(f soakCallFailure) {
	kind := f.tool
	if f.isError {
		kind += " (isError)"
	}
	s.mu.Lock()
	s.errs[kind+": "+soakMessage(f.msg)]++
	s.failures = append(s.failures, f)
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
// an isError answer is recorded and returned as an error.
func (c *soakCaller) once(tool string, args map[string]any) (*mcp.CallToolResult, error) {
	if c.c == nil {
		began := time.Now()
		cl, err := c.s.connect(context.Background(), c.sw.protocol)
		if err != nil {
			c.s.recordFailure(soakCallFailure{wait: c.sw, tool: "connect", conn: began, sent: began, failed: time.Now(), msg: err.Error()})
			return nil, err
		}
		c.c, c.connected = cl, began
	}
	if c.onSend != nil {
		c.onSend()
		c.onSend = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	sent := time.Now()
	res, err := c.c.call(ctx, tool, args)
	cancel()
	answered := time.Now()
	note := fmt.Sprintf("%s %s sent, answered %s", tool, sent.Format("15:04:05.000"), answered.Format("15:04:05.000"))
	switch {
	case err != nil:
		note += ": " + err.Error()
	case res.IsError:
		note += ": isError " + resultText(res)
	}
	c.sw.note(note)
	failure := soakCallFailure{wait: c.sw, tool: tool, conn: c.connected, sent: sent, failed: answered}
	if err != nil {
		failure.msg = err.Error()
		c.s.recordFailure(failure)
		c.close()
		return nil, err
	}
	if res.IsError {
		failure.msg, failure.isError = resultText(res), true
		c.s.recordFailure(failure)
		return nil, fmt.Errorf("%s", resultText(res))
	}
	c.backoff = 0
	c.sent, c.answered = sent, answered
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
	if sw.kind == kindText {
		// Its pane is set before it can be flipped.
		pane := s.currentPane()
		sw.mu.Lock()
		sw.target = pane
		sw.mu.Unlock()
	}
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
	case kindEvent:
		s.runEvent(c, sw, started)
	}
}

// runEvent calls wait_for_event until it answers; the judge reads the
// answer.
func (s *soak) runEvent(c *soakCaller, sw *soakWait, started func()) {
	startedAfterASecond(c, started)
	res := c.call("wait_for_event", map[string]any{"name": sw.event(), "max_wait_sec": sw.maxWait})
	sw.setAnswer(resultText(res), c.sent, c.answered)
}

// startedAfterASecond makes c's first send end the start a second later.
func startedAfterASecond(c *soakCaller, started func()) {
	sent := c.onSend
	c.onSend = func() {
		sent()
		go func() { time.Sleep(time.Second); started() }()
	}
}

// waitForArgs are the arguments of sw's wait_for call.
func (sw *soakWait) waitForArgs(s *soak) map[string]any {
	return map[string]any{
		"probe":        map[string]any{"tool": "read_file", "args": map[string]any{"path": sw.path(s)}},
		"until":        map[string]any{"matches": "^READY"},
		"poll_sec":     soakPollSec,
		"max_wait_sec": sw.maxWait,
	}
}

// soakPollSec is every soak wait_for's poll_sec.
const soakPollSec = 1

// runWaitFor calls wait_for until it answers; the judge reads the answer.
func (s *soak) runWaitFor(c *soakCaller, sw *soakWait, started func()) {
	startedAfterASecond(c, started)
	res := c.call("wait_for", sw.waitForArgs(s))
	sw.setAnswer(resultText(res), c.sent, c.answered)
}

// runAgent starts the agent and calls wait_agent until it answers
// finished; the judge reads that answer.
func (s *soak) runAgent(c *soakCaller, sw *soakWait, started func()) {
	provider := "fake"
	if sw.kind == kindAgentBlocked {
		provider = "fakecodex"
	}
	// A request_id makes the call safe to repeat after a cut-off answer.
	args := map[string]any{"provider": provider, "prompt": sw.prompt(), "request_id": fmt.Sprintf("soak-%d-%d", s.knobs.seed, sw.id)}
	id := s.startAgent(c, args)
	started()
	sw.mu.Lock()
	sw.invocation = id
	sw.mu.Unlock()
	for {
		res := c.call("wait_agent", map[string]any{"invocation_id": id})
		var p payload
		if err := json.Unmarshal([]byte(resultText(res)), &p); err != nil || p.Reason == "finished" {
			sw.setAnswer(resultText(res), c.sent, c.answered)
			return
		}
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
			s.recordFailure(soakCallFailure{wait: c.sw, tool: "start_agent", conn: c.connected, sent: c.sent, failed: c.answered,
				msg: "undecodable answer: " + resultText(res), isError: true})
		}
		c.retry()
	}
}

// runText calls wait_for_text until it answers; the judge reads the
// answer. An error about the pane once the pane's tmux server died is its
// answer too: the client's pane is gone.
func (s *soak) runText(c *soakCaller, sw *soakWait, started func()) {
	sw.mu.Lock()
	pane := sw.target
	sw.mu.Unlock()
	startedAfterASecond(c, started)
	args := map[string]any{"target": map[string]any{"paneId": pane.PaneID, "generation": pane.Generation}, "text": sw.text()}
	for {
		sent := time.Now()
		res, err := c.once("wait_for_text", args)
		if err == nil {
			sw.setAnswer(resultText(res), c.sent, c.answered)
			return
		}
		if code, at := textErrorCode(err.Error()), time.Now(); finalPaneLoss(code) && s.paneLost(sw, code, at) != "" {
			sw.setAnswer(err.Error(), sent, at)
			return
		}
		c.retry()
	}
}

// tmuxCrashDue says whether the soak kills its tmux server before kill
// cycle i: knobs.tmuxCrashes times, spread evenly over the cycles, a cycle
// after the stalls' spread (stallSchedule), so that the text waits open at
// a stall are not all on a dead pane.
func (s *soak) tmuxCrashDue(i int) bool {
	n := s.knobs.tmuxCrashes
	for k := 1; k <= n; k++ {
		if i == min(k*s.knobs.kills/(n+1)+1, s.knobs.kills-1) {
			return true
		}
	}
	return false
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
