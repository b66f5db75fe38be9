package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"

	"github.com/durawait/durawait/workflows"
)

// BenchmarkCapacity holds N waits at once in one `durawait serve
// --no-daemon` (HTTP front end, the demo probe server over stdio), as
// issue 12 measures capacity: every wait a wait_for in its own
// streamable-HTTP session (protocol 2025-11-25, its own mcp-go client and
// connection pool) probing its own file, poll_sec 2, max_wait_sec 300.
//
// Per size of DURAWAIT_BENCH_WAITS (a comma list, default 1000) it
//   - issues the N calls spread evenly over one second (the burst), each
//     with a 10-minute deadline, and measures starts per second: N over the
//     time from the first call to the last wait's first sample;
//   - holds them (a settle, then a steady window in which the tree's CPU
//     time and RSS are taken);
//   - flips every wait's file to its own match at one moment (the waits
//     read cur/w-<i>, and a symbolic link "cur" swaps from a folder of
//     "pending-<i>" files to one of "open-<i>" files) and measures flip ->
//     result per call, checking each result (matched, and the observation
//     is that wait's flipped value);
//   - reports sample lateness (gap between a wait's consecutive samples
//     during the hold, minus poll_sec), the peak RSS of the process tree
//     (durawait and its children, the sum of VmRSS sampled every 200 ms),
//     RSS and CPU per wait.
//
// Each size prints one markdown row (b.Logf) and appends it to
// capacity-report.md at the repository root (DURAWAIT_BENCH_REPORT names
// another file). DURAWAIT_BENCH_PROFILE=<file> writes a 12 s CPU profile
// of durawait taken from the start of the burst (suffixed .<N> when there
// are several sizes), and at the start of the hold its heap profile
// (<file>.heap, and as text with the runtime's memory statistics
// <file>.heap.txt) and its goroutines (<file>.goroutines.txt).
//
// DURAWAIT_BENCH_CLUSTER=1 runs durawait on the production temporal-server
// on PostgreSQL 15 that make e2e-cluster runs (built from the pinned
// server module; DURAWAIT_BENCH_SHARDS history shards, 4 by default),
// started once for all sizes on the same machine (each size on its own task
// queue, so that no size's leftovers run on the next), instead of its
// embedded engine; the row then also gives the server's and PostgreSQL's
// proportional memory (PSS) and CPU.
func BenchmarkCapacity(b *testing.B) {
	sizes := capacitySizes(b)
	limit := raiseOpenFiles(b)
	eng := newCapacityEngine(b)
	for _, n := range sizes {
		// A session is a socket on each side, plus what durawait and the
		// test hold besides (engine, SQLite, pipes).
		require.Greater(b, limit, uint64(n)+512, "RLIMIT_NOFILE hard limit %d is too low for %d sessions", limit, n)
		b.Run("waits="+itoa(n), func(b *testing.B) {
			for range b.N {
				row := runCapacity(b, n, profilePath(len(sizes), n), eng)
				row.report(b)
				row.check(b)
			}
		})
	}
}

// Capacity benchmark settings (issue 12).
const (
	capPollSec    = 2
	capMaxWaitSec = 300
	capBurst      = time.Second
	capCallLimit  = 10 * time.Minute
	capSettle     = 5 * time.Second
	capHold       = 20 * time.Second
	capRSSEvery   = 200 * time.Millisecond
	capPSSEvery   = time.Second
	capTailEvery  = 20 * time.Millisecond
	capInitWorker = 16
)

// capacityEngine is the Temporal service the benchmark's durawait runs on.
type capacityEngine struct {
	// name is "embedded", or says which cluster.
	name string
	// flags and env connect durawait to it (none: its embedded engine).
	flags, env []string
	// pids are its own processes (none when it is durawait's embedded
	// engine, whose cost is durawait's).
	pids []int
}

const embeddedEngine = "embedded"

// external says whether the engine runs outside durawait.
func (e capacityEngine) external() bool { return len(e.pids) > 0 }

// newCapacityEngine is durawait's embedded engine, or with
// DURAWAIT_BENCH_CLUSTER set the production cluster of make e2e-cluster
// (mTLS, PostgreSQL 15 with fsync off, as that test runs it) with
// durawait's search attributes created, as an operator would.
func newCapacityEngine(b *testing.B) capacityEngine {
	if os.Getenv("DURAWAIT_BENCH_CLUSTER") == "" {
		return capacityEngine{name: embeddedEngine}
	}
	shards := 4
	if v := os.Getenv("DURAWAIT_BENCH_SHARDS"); v != "" {
		var err error
		shards, err = strconv.Atoi(v)
		require.NoError(b, err, "DURAWAIT_BENCH_SHARDS")
	}
	target, server, pg := productionCluster(b, shards)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := target.client.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: target.Namespace, SearchAttributes: workflows.SearchAttributes()})
	require.NoError(b, err, "create durawait's search attributes")
	awaitSearchAttributes(b, target)
	flags, env := target.connect(1)
	return capacityEngine{
		name:  fmt.Sprintf("temporal-server, PostgreSQL, %d shards", shards),
		flags: flags, env: env,
		pids: []int{server.cmd.Process.Pid, pg.pid(b)},
	}
}

// capacitySizes reads DURAWAIT_BENCH_WAITS: "1000" by default.
func capacitySizes(b *testing.B) []int {
	return envPositiveInts(b, "DURAWAIT_BENCH_WAITS", "1000")
}

// envPositiveInts reads the environment variable name, a comma list of
// positive integers (def when it is unset).
func envPositiveInts(t testing.TB, name, def string) []int {
	spec := os.Getenv(name)
	if spec == "" {
		spec = def
	}
	var ns []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(t, err, "%s=%q: a comma list of positive integers", name, spec)
		require.Positive(t, n, "%s=%q", name, spec)
		ns = append(ns, n)
	}
	return ns
}

func profilePath(sizes, n int) string {
	p := os.Getenv("DURAWAIT_BENCH_PROFILE")
	if p == "" || sizes == 1 {
		return p
	}
	return p + "." + itoa(n)
}

// raiseOpenFiles sets the test process's soft RLIMIT_NOFILE to its hard
// limit (Go does so at start-up already; this makes it explicit) and
// returns it. durawait, a Go program, raises its own the same way; each
// run checks durawait's limit through /proc.
func raiseOpenFiles(b *testing.B) uint64 {
	var lim syscall.Rlimit
	require.NoError(b, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		require.NoError(b, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	}
	return lim.Cur
}

// openFilesLimit is a process's soft "Max open files" from /proc.
func openFilesLimit(pid int) uint64 {
	for _, line := range strings.Split(readFile(fmt.Sprintf("/proc/%d/limits", pid)), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, _ := strconv.ParseUint(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// capacityRow is one size's figures.
type capacityRow struct {
	waits          int
	load           string // the 1-minute load average before the run
	allSampled     time.Duration
	startsPerSec   float64
	failed         int
	why            map[string]int
	flip           []time.Duration // flip -> result, per returned call
	lateness       []time.Duration
	detect         []time.Duration // flip -> the wait's first sample after it
	tailLag        time.Duration   // the call log's longest unread time during the hold
	heldCalls      float64         // probe calls per second during the hold
	wrong, lost    int
	wrongExample   string
	peakRSSKiB     int
	holdRSSKiB     int
	idleRSSKiB     int
	cpuPerWait     float64 // % of one core
	durawaitHWMKiB int
	// engine names the Temporal service; its PSS and CPU per wait are
	// zero when it is durawait's embedded engine (counted above).
	engine           string
	enginePeakPSSKiB int
	engineIdlePSSKiB int
	engineHoldPSSKiB int
	engineCPUPerWait float64
}

// waitCall is the outcome of one wait's call.
type waitCall struct {
	res      *mcp.CallToolResult
	err      error
	returned time.Time
}

// runCapacity runs one size end to end.
func runCapacity(b *testing.B, n int, profile string, eng capacityEngine) capacityRow {
	row := capacityRow{waits: n, load: loadAverage(), engine: eng.name}
	w := newWorkspace(b)
	flags := append([]string{"--no-daemon", "--log-level", "info"}, eng.flags...)
	if eng.external() {
		flags = append(flags, "--task-queue", "durawait-capacity-"+itoa(n))
	}
	pprofAddr := freeAddr(b)
	if profile != "" {
		flags = append(flags, "--pprof", pprofAddr)
	}
	inst := w.startServeWith(capacityConfig(b, w), freeAddr(b), append(w.env(), eng.env...), flags...)
	pid := inst.cmd.Process.Pid
	require.Greater(b, openFilesLimit(pid), uint64(n)+512, "durawait's open-files limit is too low for %d sessions", n)

	rss := startRSSSampler(capRSSEvery, func() int { return treeRSS(pid) })
	defer rss.stop()
	// PostgreSQL's processes share its buffers: their proportional share
	// (PSS) adds up to what they hold together, their RSS would not. Read
	// less often: smaps_rollup of every backend costs more than VmRSS.
	enginePSS := &rssSampler{}
	if eng.external() {
		enginePSS = startRSSSampler(capPSSEvery, func() int { return treePSS(eng.pids...) })
		defer enginePSS.stop()
		row.engineIdlePSSKiB = treePSS(eng.pids...)
	}
	clients := capacitySessions(b, inst, n)
	prepareFlip(b, w, n)
	log := startSampleLog(w.path("calls.log"), n)
	defer log.stop()
	row.idleRSSKiB = treeRSS(pid)

	profiled := make(chan struct{})
	if profile != "" {
		go func() {
			defer close(profiled)
			saveProfile(b, "http://"+pprofAddr+"/debug/pprof/profile?seconds=12", profile)
		}()
	} else {
		close(profiled)
	}

	// The burst: call i at i/N of a second.
	calls := make([]waitCall, n)
	returned := make(chan int, n)
	var wg sync.WaitGroup
	burst := time.Now()
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Until(burst.Add(capBurst * time.Duration(i) / time.Duration(n))))
			ctx, cancel := context.WithTimeout(context.Background(), capCallLimit)
			defer cancel()
			calls[i].res, calls[i].err = clients[i].call(ctx, "wait_for", capWaitArgs(w, i), "")
			calls[i].returned = time.Now()
			returned <- i
		})
	}

	// Every wait sampled, or its call over (a failed start never samples).
	over := make([]bool, n)
	deadline := burst.Add(capCallLimit)
	for log.settled(over) < n {
		require.True(b, time.Now().Before(deadline), "after %v only %d of %d waits sampled", capCallLimit, log.sampled(), n)
		time.Sleep(100 * time.Millisecond)
		drain(returned, over)
	}
	last := log.lastFirstSample()
	row.allSampled = last.Sub(burst)
	row.startsPerSec = float64(n) / row.allSampled.Seconds()
	<-profiled

	// The hold: a settle, then the steady window (with the memory held
	// and the goroutines, profiled at its start).
	time.Sleep(capSettle)
	if profile != "" {
		saveProfile(b, "http://"+pprofAddr+"/debug/pprof/heap", profile+".heap")
		saveProfile(b, "http://"+pprofAddr+"/debug/pprof/goroutine?debug=1", profile+".goroutines.txt")
		saveProfile(b, "http://"+pprofAddr+"/debug/pprof/heap?debug=1", profile+".heap.txt")
	}
	holdFrom, cpuFrom, engineFrom := time.Now(), treeCPU(pid), treeCPU(eng.pids...)
	time.Sleep(capHold)
	holdTo, cpuTo, engineTo := time.Now(), treeCPU(pid), treeCPU(eng.pids...)
	row.cpuPerWait = 100 * (cpuTo - cpuFrom) / holdTo.Sub(holdFrom).Seconds() / float64(n)
	row.engineCPUPerWait = 100 * (engineTo - engineFrom) / holdTo.Sub(holdFrom).Seconds() / float64(n)
	row.holdRSSKiB = rss.mean(holdFrom, holdTo)
	row.engineHoldPSSKiB = enginePSS.mean(holdFrom, holdTo)
	row.heldCalls = float64(log.samplesBetween(holdFrom, holdTo)) / holdTo.Sub(holdFrom).Seconds()

	// The flip: every wait's file to its own match at one moment.
	flipped := flip(b, w)
	wg.Wait()
	row.peakRSSKiB = rss.peak()
	row.enginePeakPSSKiB = enginePSS.peak()
	row.durawaitHWMKiB = peakRSS(pid)
	row.lateness = log.lateness(last, flipped, capPollSec*time.Second)
	row.detect = log.firstSamplesAfter(flipped)
	row.tailLag = log.lagBetween(last, flipped)
	row.judge(calls, flipped)
	return row
}

// capacityConfig is the harness's config with the demo probe server at
// durawait's own lease (see benchLease).
func capacityConfig(b *testing.B, w *workspace) string {
	return benchLease(b, w.writeConfig(w.demoServer("demo")))
}

// benchLease rewrites the config at path to durawait's default host lease
// (the end-to-end configs shorten it to 2 s for quick crash recovery,
// which a benchmark's figure should not assume), or
// DURAWAIT_BENCH_LEASE_SEC when set, and returns path.
func benchLease(b *testing.B, path string) string {
	text := readFile(path)
	const short = "lease_sec = 2\n"
	require.Contains(b, text, short)
	lease := ""
	if v := os.Getenv("DURAWAIT_BENCH_LEASE_SEC"); v != "" {
		lease = "lease_sec = " + v + "\n"
	}
	require.NoError(b, os.WriteFile(path, []byte(strings.Replace(text, short, lease, 1)), 0o644))
	return path
}

// drain marks the calls that returned since the last look.
func drain(returned <-chan int, over []bool) {
	for {
		select {
		case i := <-returned:
			over[i] = true
		default:
			return
		}
	}
}

// judge counts failed, wrong and lost calls and the flip -> result times.
func (r *capacityRow) judge(calls []waitCall, flipped time.Time) {
	why := &failures{}
	for i, c := range calls {
		switch {
		case c.err != nil:
			r.failed++
			r.lost++
			why.note(c.err.Error())
			continue
		case c.res.IsError:
			r.failed++
			r.lost++
			why.note(resultText(c.res))
			continue
		}
		var res waitResult
		if err := json.Unmarshal([]byte(resultText(c.res)), &res); err != nil || res.Reason != "matched" ||
			strings.TrimSpace(res.LastObservation) != "open-"+itoa(i) {
			r.wrong++
			if r.wrongExample == "" {
				r.wrongExample = fmt.Sprintf("wait %d: %.200s", i, resultText(c.res))
			}
			continue
		}
		r.flip = append(r.flip, c.returned.Sub(flipped))
	}
	r.why = why.counts()
}

// capWaitFile is wait i's probe file in dir.
func capWaitFile(dir string, i int) string { return filepath.Join(dir, "w-"+itoa(i)) }

// prepareFlip writes every wait's two files, pending/w-<i> ("pending-<i>")
// and open/w-<i> ("open-<i>"), and points the symbolic link "cur", the
// folder the waits read, at pending.
func prepareFlip(b *testing.B, w *workspace, n int) {
	for _, dir := range []string{"pending", "open"} {
		require.NoError(b, os.MkdirAll(w.path(dir), 0o755))
		for i := range n {
			w.write(capWaitFile(dir, i), dir+"-"+itoa(i))
		}
	}
	require.NoError(b, os.Symlink("pending", w.path("cur")))
}

// flip points "cur" at open by renaming a new link over it: every wait's
// file changes to its own match in one atomic step. It returns the moment.
func flip(b *testing.B, w *workspace) time.Time {
	require.NoError(b, os.Symlink("open", w.path("cur.next")))
	require.NoError(b, os.Rename(w.path("cur.next"), w.path("cur")))
	return time.Now()
}

// capWaitArgs is wait i's wait_for: its own file, until it says open.
func capWaitArgs(w *workspace, i int) map[string]any {
	return readFileWait(w.path(capWaitFile("cur", i)), map[string]any{
		"until":    map[string]any{"matches": "^open-"},
		"poll_sec": capPollSec, "max_wait_sec": capMaxWaitSec,
	})
}

// capacitySessions initializes n MCP sessions (protocol 2025-11-25), each
// its own client with its own connection pool, as n agents would be.
func capacitySessions(b *testing.B, inst *instance, n int) []*mcpClient {
	clients := make([]*mcpClient, n)
	next := make(chan int, n) // filled up front: a worker that fails ends
	var wg sync.WaitGroup
	for range capInitWorker {
		wg.Go(func() {
			for i := range next {
				tr := http.DefaultTransport.(*http.Transport).Clone()
				tr.Proxy = nil
				c, err := client.NewStreamableHttpClient("http://"+inst.http+"/mcp",
					transport.WithHTTPBasicClient(&http.Client{Transport: tr}))
				if err != nil {
					b.Errorf("session %d: %v", i, err)
					continue
				}
				clients[i] = initializeAt(b, c, mcp.ProtocolVersion20251125)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	require.Equal(b, mcp.ProtocolVersion20251125, clients[0].protocol)
	return clients
}

// sampleLog follows the demo probe's call log, stamping each line with the
// time it was read (every capTailEvery, so a stamp is up to that late):
// the sample times of every wait, by its file.
type sampleLog struct {
	path  string
	mu    sync.Mutex
	times [][]time.Time
	first int // waits with at least one sample
	off   int64
	rest  []byte
	reads []time.Time // when each read began (a stamp is at most one gap late)
	done  chan struct{}
	ended chan struct{}
}

func startSampleLog(path string, n int) *sampleLog {
	s := &sampleLog{path: path, times: make([][]time.Time, n), done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		tick := time.NewTicker(capTailEvery)
		defer tick.Stop()
		for {
			s.read()
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampleLog) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
		<-s.ended
	}
}

// read takes the log's new complete lines.
func (s *sampleLog) read() {
	s.mu.Lock()
	s.reads = append(s.reads, time.Now())
	s.mu.Unlock()
	f, err := os.Open(s.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(s.off, io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(f)
	if err != nil || len(data) == 0 {
		return
	}
	now := time.Now()
	s.off += int64(len(data))
	data = append(s.rest, data...)
	end := bytes.LastIndexByte(data, '\n')
	s.rest = append([]byte(nil), data[end+1:]...)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range bytes.Split(data[:end+1], []byte("\n")) {
		if i, ok := capLineWait(line); ok && i < len(s.times) {
			if len(s.times[i]) == 0 {
				s.first++
			}
			s.times[i] = append(s.times[i], now)
		}
	}
}

// capLineWait is the wait a call-log line samples for ("read_file
// {"path":".../w-<i>"}").
func capLineWait(line []byte) (int, bool) {
	id, ok := strings.CutPrefix(filepath.Base(probedPath(string(line))), "w-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(id)
	return i, err == nil
}

func (s *sampleLog) sampled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// settled counts the waits sampled or whose call is over.
func (s *sampleLog) settled(over []bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, t := range s.times {
		if len(t) > 0 || over[i] {
			n++
		}
	}
	return n
}

// lastFirstSample is the latest of the waits' first samples.
func (s *sampleLog) lastFirstSample() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	for _, t := range s.times {
		if len(t) > 0 && t[0].After(last) {
			last = t[0]
		}
	}
	return last
}

// samplesBetween counts the samples of all waits in [from, to).
func (s *sampleLog) samplesBetween(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ts := range s.times {
		for _, t := range ts {
			if !t.Before(from) && t.Before(to) {
				n++
			}
		}
	}
	return n
}

// lagBetween is the longest time between two reads of the log that began
// in [from, to].
func (s *sampleLog) lagBetween(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lag time.Duration
	for i := 1; i < len(s.reads); i++ {
		if !s.reads[i-1].Before(from) && !s.reads[i].After(to) {
			lag = max(lag, s.reads[i].Sub(s.reads[i-1]))
		}
	}
	return lag
}

// firstSamplesAfter is, for every wait sampled after t, the time from t to
// its first sample after t.
func (s *sampleLog) firstSamplesAfter(t time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var after []time.Duration
	for _, ts := range s.times {
		for _, at := range ts {
			if at.After(t) {
				after = append(after, at.Sub(t))
				break
			}
		}
	}
	return after
}

// lateness is, for every wait, each gap between consecutive samples both
// in [from, to), minus poll.
func (s *sampleLog) lateness(from, to time.Time, poll time.Duration) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var late []time.Duration
	for _, ts := range s.times {
		var prev time.Time
		for _, t := range ts {
			if t.Before(from) || !t.Before(to) {
				continue
			}
			if !prev.IsZero() {
				late = append(late, t.Sub(prev)-poll)
			}
			prev = t
		}
	}
	return late
}

// rssSampler samples a memory figure (KiB) at an interval.
type rssSampler struct {
	mu      sync.Mutex
	samples []rssSample
	done    chan struct{}
	ended   chan struct{}
}

type rssSample struct {
	at  time.Time
	kib int
}

// startRSSSampler samples measure (KiB) every interval.
func startRSSSampler(every time.Duration, measure func() int) *rssSampler {
	r := &rssSampler{done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(r.ended)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s := rssSample{at: time.Now(), kib: measure()}
			r.mu.Lock()
			r.samples = append(r.samples, s)
			r.mu.Unlock()
			select {
			case <-r.done:
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

func (r *rssSampler) stop() {
	select {
	case <-r.done:
	default:
		close(r.done)
		<-r.ended
	}
}

func (r *rssSampler) peak() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := 0
	for _, s := range r.samples {
		p = max(p, s.kib)
	}
	return p
}

// mean is the mean tree RSS sampled in [from, to].
func (r *rssSampler) mean(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	sum, n := 0, 0
	for _, s := range r.samples {
		if !s.at.Before(from) && !s.at.After(to) {
			sum += s.kib
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// procStat is what the benchmark reads of /proc/<pid>/stat.
type procStat struct {
	ppid int
	// cpu is utime+stime+cutime+cstime, in clock ticks.
	cpu int64
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	// pid (comm) state ppid ...: fields from state on (state is field 3).
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return procStat{}, false
	}
	var cpu int64
	for _, field := range f[11:15] { // utime stime cutime cstime (14-17)
		v, _ := strconv.ParseInt(field, 10, 64)
		cpu += v
	}
	return procStat{ppid: atoi(f[1]), cpu: cpu}, true
}

// treePIDs is roots and every process descending from them.
func treePIDs(roots ...int) []int {
	if len(roots) == 0 {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return roots
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid := atoi(e.Name())
		if pid <= 0 {
			continue
		}
		if st, ok := readProcStat(pid); ok {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	tree := append([]int(nil), roots...)
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// treeRSS sums the VmRSS (KiB) of the process trees of roots.
func treeRSS(roots ...int) int { return sumProcField(roots, "status", "VmRSS:") }

// treePSS sums the proportional set size (KiB) of the process trees of
// roots: memory shared by several of them counts once in all.
func treePSS(roots ...int) int { return sumProcField(roots, "smaps_rollup", "Pss:") }

// sumProcField sums a "key: N kB" line of /proc/<pid>/<file> over the
// process trees of roots.
func sumProcField(roots []int, file, key string) int {
	sum := 0
	for _, pid := range treePIDs(roots...) {
		for _, line := range strings.Split(readFile(fmt.Sprintf("/proc/%d/%s", pid, file)), "\n") {
			if rest, ok := strings.CutPrefix(line, key); ok {
				sum += atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			}
		}
	}
	return sum
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// treeCPU is the CPU seconds of the process trees of roots (their reaped
// children included).
func treeCPU(roots ...int) float64 {
	var ticks int64
	for _, pid := range treePIDs(roots...) {
		if st, ok := readProcStat(pid); ok {
			ticks += st.cpu
		}
	}
	return float64(ticks) / clockTicks
}

// loadAverage is the 1-minute load average.
func loadAverage() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

const capacityHeader = "| date (UTC) | load before | waits | starts/s | failed | flip → result p50 / p99 / max | sample lateness p99 | wrong / lost | peak RSS (tree) MiB | RSS/wait KiB | CPU/wait (% of a core) | engine | engine peak PSS MiB | engine CPU/wait |\n" +
	"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"

// markdown is the row of capacity-report.md.
func (r capacityRow) markdown() string {
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	flip := append([]time.Duration(nil), r.flip...)
	late := append([]time.Duration(nil), r.lateness...)
	enginePSS, engineCPU := "in durawait", "in durawait"
	if r.external() {
		enginePSS, engineCPU = fmt.Sprintf("%.0f", float64(r.enginePeakPSSKiB)/1024), fmt.Sprintf("%.3f", r.engineCPUPerWait)
	}
	return fmt.Sprintf("| %s | %s | %d | %.1f | %d | %s / %s / %s | %s | %d / %d | %.0f | %.0f | %.3f | %s | %s | %s |",
		time.Now().UTC().Format("2006-01-02 15:04"), r.load, r.waits, r.startsPerSec, r.failed,
		s(percentile(flip, 0.5)), s(percentile(flip, 0.99)), s(percentile(flip, 1)),
		s(percentile(late, 0.99)), r.wrong, r.lost, float64(r.peakRSSKiB)/1024, r.rssPerWaitKiB(), r.cpuPerWait,
		r.engine, enginePSS, engineCPU)
}

// external says whether the engine ran outside durawait.
func (r capacityRow) external() bool { return r.engine != embeddedEngine }

func (r capacityRow) rssPerWaitKiB() float64 { return float64(r.holdRSSKiB) / float64(r.waits) }

// rssAboveIdleKiB is the tree RSS per wait above the idle tree's.
func (r capacityRow) rssAboveIdleKiB() float64 {
	return float64(r.holdRSSKiB-r.idleRSSKiB) / float64(r.waits)
}

// report logs the row with its notes, appends it to the report file and
// reports each figure as a metric.
func (r capacityRow) report(b *testing.B) {
	row := r.markdown()
	b.Logf("\n%s%s", capacityHeader, row)
	b.Logf("all sampled %.1f s after the burst; probe calls/s held %.0f (ideal %d); tree RSS idle (sessions open, "+
		"no wait) %d MiB, during the hold %d MiB (%.0f KiB/wait above idle); durawait VmHWM %d MiB; failed calls by message: %v",
		r.allSampled.Seconds(), r.heldCalls, r.waits/capPollSec, r.idleRSSKiB/1024, r.holdRSSKiB/1024,
		r.rssAboveIdleKiB(), r.durawaitHWMKiB/1024, r.why)
	early := 0
	for _, l := range r.lateness {
		if l < -capPollSec*time.Second/2 {
			early++
		}
	}
	detect := append([]time.Duration(nil), r.detect...)
	b.Logf("flip -> first sample after it p50 / p99 / max: %.2f / %.2f / %.2f s (%d waits); samples during the hold "+
		"less than poll_sec/2 after the wait's previous one: %d of %d gaps; call log read every %v, longest pause during the hold %v",
		percentile(detect, 0.5).Seconds(), percentile(detect, 0.99).Seconds(), percentile(detect, 1).Seconds(), len(detect),
		early, len(r.lateness), capTailEvery, r.tailLag.Round(time.Millisecond))
	b.ReportMetric(float64(early), "early-samples")
	b.ReportMetric(percentile(detect, 0.99).Seconds(), "flip-to-sample-p99-s")
	if r.wrongExample != "" {
		b.Logf("first wrong result: %s", r.wrongExample)
	}
	appendReport(b, row)

	secs := func(d time.Duration) float64 { return d.Seconds() }
	flip := append([]time.Duration(nil), r.flip...)
	late := append([]time.Duration(nil), r.lateness...)
	b.ReportMetric(r.startsPerSec, "starts/s")
	b.ReportMetric(secs(r.allSampled), "all-sampled-s")
	b.ReportMetric(float64(r.failed), "failed")
	b.ReportMetric(secs(percentile(flip, 0.5)), "flip-p50-s")
	b.ReportMetric(secs(percentile(flip, 0.99)), "flip-p99-s")
	b.ReportMetric(secs(percentile(flip, 1)), "flip-max-s")
	b.ReportMetric(secs(percentile(late, 0.5)), "late-p50-s")
	b.ReportMetric(secs(percentile(late, 0.99)), "late-p99-s")
	b.ReportMetric(secs(percentile(late, 1)), "late-max-s")
	b.ReportMetric(float64(r.wrong), "wrong")
	b.ReportMetric(float64(r.lost), "lost")
	b.ReportMetric(float64(r.peakRSSKiB)/1024, "peak-rss-tree-MiB")
	b.ReportMetric(r.rssPerWaitKiB(), "rss/wait-KiB")
	b.ReportMetric(r.rssAboveIdleKiB(), "rss/wait-above-idle-KiB")
	b.ReportMetric(r.cpuPerWait, "cpu/wait-%core")
	b.ReportMetric(r.heldCalls, "probe-calls/s")
	if r.external() {
		b.Logf("engine %s: PSS idle %d MiB, during the hold %d MiB (%.0f KiB/wait above idle), peak %d MiB; CPU/wait %.3f %% of a core",
			r.engine, r.engineIdlePSSKiB/1024, r.engineHoldPSSKiB/1024, float64(r.engineHoldPSSKiB-r.engineIdlePSSKiB)/float64(r.waits),
			r.enginePeakPSSKiB/1024, r.engineCPUPerWait)
		b.ReportMetric(float64(r.enginePeakPSSKiB)/1024, "engine-peak-pss-MiB")
		b.ReportMetric(r.engineCPUPerWait, "engine-cpu/wait-%core")
	}
}

// check fails the benchmark on a failed, wrong or lost call (after the row
// is written: a failing run still leaves its figures).
func (r capacityRow) check(b *testing.B) {
	require.Zero(b, r.failed, "failed calls by message: %v", r.why)
	require.Zero(b, r.wrong, "first wrong result: %s", r.wrongExample)
	require.Zero(b, r.lost)
}

// appendReport appends row to the report file, with the table's header
// when the file is new.
func appendReport(b *testing.B, row string) {
	path := os.Getenv("DURAWAIT_BENCH_REPORT")
	if path == "" {
		path = filepath.Join("..", "..", "capacity-report.md")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Logf("report: %v", err)
		return
	}
	defer f.Close()
	// A new table when the file is new or its last table has other
	// columns (a report written before them).
	if !strings.Contains(readFile(path), capacityHeader) {
		_, _ = f.WriteString("\n" + capacityHeader)
	}
	if _, err := f.WriteString(row + "\n"); err != nil {
		b.Logf("report: %v", err)
	}
}
