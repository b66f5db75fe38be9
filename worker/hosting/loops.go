package hosting

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// Why a loop's context ends, besides its own end (context.Cause). A loop
// stopped by its workflow answers its activity as cancelled; a loop that
// is dropped (its host released to another holder, or this worker
// stopping) answers nothing: the host's next holder resumes it.
var (
	errReleased = errors.New("the host was released to another holder")
	errStopping = errors.New("the worker is stopping")
	// errNotOpen: Temporal says a loop resumed from the journal no longer
	// has its activity open (its wait ended, or another holder answered
	// it while this host was down).
	errNotOpen = errors.New("the loop's activity is no longer open")
)

// loopRef names one loop: the wait's workflow run, and the activity that
// stands for the loop in it.
type loopRef struct {
	WorkflowID string
	RunID      string
	ActivityID string
	// Host is the host whose queue the loop's activity is on.
	Host string
}

// key is what loops are told apart by: one loop per workflow run.
func (r loopRef) key() loopKey { return loopKey{r.WorkflowID, r.RunID} }

type loopKey struct{ workflowID, runID string }

// loopFunc runs a loop to its end; its result or error is the activity's
// answer.
type loopFunc func(ctx context.Context) (any, error)

// completer answers an activity by its IDs: the Temporal client.
type completer interface {
	CompleteActivityByID(ctx context.Context, namespace, workflowID, runID, activityID string, result any, err error) error
}

// loops are the loops this worker runs, of its own host and of the hosts
// it adopted. Each runs in a goroutine; its end is told to the observer
// (the in-process feed: a call answers at once) and answered to Temporal
// by the activity's IDs (so a loop resumed after a restart answers the
// very activity its first run began).
type loops struct {
	namespace string
	client    completer
	observer  activities.Observer
	logger    *slog.Logger
	// files keeps the unrecorded ends on disk too, for the host's next
	// start (nil: memory only).
	files *endFiles
	// journal keeps the own host's running loops on disk, for its next
	// start (nil: none).
	journal *loopJournal
	// confirmNow, when set, asks Temporal at once whether the activity of
	// a loop resumed from the journal is open: the loop has its end and
	// waits for the answer (see awaitConfirmed). The host's confirmation
	// of all its journaled loops goes in their order; a loop whose end is
	// due goes first.
	confirmNow func(loopRef)

	mu      sync.Mutex
	running map[loopKey]*runningLoop
	// stopped are the runs whose stop arrived before their loop (a
	// StopLoop overtaking a resumed loop), until stoppedTTL.
	stopped map[loopKey]time.Time
	// unrecorded are the ends of loops that Temporal has not recorded:
	// until it does, or, when it refused one because it had already
	// ended the loop's activity by its timeout, until unrecordedTTL. The
	// wait then asks for it (collect), so that its run records what the
	// in-process feed told.
	unrecorded map[loopKey]unrecordedEnd
	// pruned is when unrecorded was last rid of its expired ends.
	pruned time.Time
	// wg counts the loop goroutines.
	wg sync.WaitGroup
	// answering bounds the answers in flight to Temporal: when thousands
	// of waits end at once, their answers queue here, not as thousands of
	// calls contending for the engine (which writes them one by one).
	answering chan struct{}
}

// maxAnswering is how many loops answer Temporal at once.
const maxAnswering = 16

// previousLoopWait bounds how long a loop waits for the loop of an
// activity before it in its run to leave (microseconds, once its answer
// was taken).
const previousLoopWait = 5 * time.Second

// stoppedTTL is how long a stop that found no loop is remembered.
const stoppedTTL = 2 * time.Minute

// unrecordedTTL is how long an end Temporal refused is kept for its wait
// (which asks within seconds of the refusal).
const unrecordedTTL = 2 * time.Minute

type runningLoop struct {
	ref    loopRef
	cancel context.CancelCauseFunc
	// answering bounds the loop's answer: abandon ends it when the loop
	// is dropped (the host's next holder answers instead), so a Temporal
	// that cannot be reached never holds up a drop or a stop.
	answering context.Context
	abandon   context.CancelFunc
	done      chan struct{}
	// confirmed is closed once Temporal says the activity of a loop
	// resumed from the journal is open (nil: it was known to be).
	confirmed chan struct{}
	// isConfirmed says confirmed is closed.
	isConfirmed bool
}

// loopStart is how a loop starts.
type loopStart struct {
	// journal, when set, is journaled while the loop runs.
	journal *journalEntry
	// unconfirmed: the loop is resumed from the journal, and Temporal has
	// not said yet that its activity is open. Its end is told and answered
	// only once it has (confirm): a loop whose activity an adopter answered
	// while this host was down must not tell a caller a second end. (An
	// adopter that still runs the loop while this host takes its lease
	// back may tell its own callers its own end meanwhile, as with a loop
	// resumed from the history: see hosts.md, "The host comes back".)
	unconfirmed bool
}

// unrecordedEnd is a loop's end that Temporal did not take.
type unrecordedEnd struct {
	result any
	err    error
	at     time.Time
}

func newLoops(namespace string, c completer, observer activities.Observer, files *endFiles, journal *loopJournal, logger *slog.Logger) *loops {
	return &loops{namespace: namespace, client: c, observer: observer, files: files, journal: journal, logger: logger,
		running: map[loopKey]*runningLoop{}, stopped: map[loopKey]time.Time{}, unrecorded: map[loopKey]unrecordedEnd{}, answering: make(chan struct{}, maxAnswering)}
}

// start runs the loop of ref unless one of its run is already running
// here (a resume racing the activity's own delivery): false then. A run
// whose stop came first starts stopped. A run whose end is on disk (a
// caller was told it, and the worker was killed before Temporal recorded
// it) does not run its loop again: its activity is answered with that end.
// The loop's context carries the trace of parent (the activity that
// started it; none for a resumed loop), and nothing else of it: the loop
// outlives the activity's call. how says whether it is journaled, and
// whether Temporal has yet to confirm it.
func (l *loops) start(parent context.Context, ref loopRef, how loopStart, run loopFunc) bool {
	if l.files != nil {
		if end, ok := l.files.get(ref.key()); ok {
			l.logger.Info("a loop's end was told before a restart and not recorded: answering with it", "workflow", ref.WorkflowID)
			run = func(context.Context) (any, error) { return end.result, end.err }
		}
	}
	l.mu.Lock()
	if prev, ok := l.running[ref.key()]; ok && prev.ref.ActivityID != ref.ActivityID && ref.ActivityID != "" {
		// The loop of an activity before it in the run, which ended (the
		// run scheduled this one once it had its answer) and is leaving:
		// its journal entry and end go before this one starts.
		l.mu.Unlock()
		select {
		case <-prev.done:
		case <-time.After(previousLoopWait):
		}
		l.mu.Lock()
	}
	if _, ok := l.running[ref.key()]; ok {
		l.mu.Unlock()
		return false
	}
	// The activity's span (ended when the activity returns, which is at
	// once): the loop's calls are its children, on its tracer provider.
	traced := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(parent))
	ctx, cancel := context.WithCancelCause(traced)
	answering, abandon := context.WithCancel(context.Background())
	lp := &runningLoop{ref: ref, cancel: cancel, answering: answering, abandon: abandon, done: make(chan struct{})}
	if how.unconfirmed {
		lp.confirmed = make(chan struct{})
	}
	l.running[ref.key()] = lp
	if at, ok := l.stopped[ref.key()]; ok && time.Since(at) < stoppedTTL {
		delete(l.stopped, ref.key())
		cancel(activities.ErrLoopStopped)
	}
	l.wg.Add(1)
	l.mu.Unlock()
	if how.journal != nil && l.journal != nil {
		if err := l.journal.put(*how.journal); err != nil {
			l.logger.Warn("could not journal a loop; a restart resumes it from Temporal instead", "workflow", ref.WorkflowID, "error", err)
		}
	}
	go l.run(ctx, lp, run)
	return true
}

// confirm tells a loop resumed from the journal what Temporal says of its
// activity: open, and the loop's end is told and answered when it comes;
// or not, and the loop is dropped without an answer or a tell (an agent's
// CLI runs on), its entry removed from the journal.
func (l *loops) confirm(key loopKey, open bool) {
	l.mu.Lock()
	lp, running := l.running[key]
	// Only the loop resumed unconfirmed: a later loop of the run (started
	// by its activity's delivery, after this one ended) is not this
	// answer's, and keeps its entry.
	ours := running && lp.confirmed != nil && !lp.isConfirmed
	if ours && open {
		lp.isConfirmed = true
		close(lp.confirmed)
	}
	l.mu.Unlock()
	if open || (running && !ours) {
		return
	}
	if ours {
		lp.cancel(errNotOpen)
		lp.abandon()
	}
	l.forgetJournaled(key)
}

// awaitConfirmed waits until Temporal has confirmed the loop's activity
// open (at once for a loop not resumed from the journal, or already
// confirmed); false when the loop was dropped first.
func (l *loops) awaitConfirmed(lp *runningLoop) bool {
	if lp.confirmed == nil {
		return true
	}
	select {
	case <-lp.confirmed:
		return true
	default:
	}
	if l.confirmNow != nil {
		l.confirmNow(lp.ref)
	}
	select {
	case <-lp.confirmed:
		return true
	case <-lp.answering.Done():
		return false
	}
}

// forgetJournaled removes a run's loop from the journal: its end is
// answered, or its activity is no longer open.
func (l *loops) forgetJournaled(key loopKey) {
	if l.journal != nil {
		l.journal.remove(key)
		l.journal.unexpect(key) // its end is Temporal's: no sweep need look for it
	}
}

// run runs one loop and answers its activity.
func (l *loops) run(ctx context.Context, lp *runningLoop, run loopFunc) {
	defer l.wg.Done()
	defer close(lp.done)
	defer lp.abandon()
	defer func() {
		l.mu.Lock()
		if l.running[lp.ref.key()] == lp {
			delete(l.running, lp.ref.key())
		}
		l.mu.Unlock()
	}()
	result, err := run(ctx)
	cause := context.Cause(ctx)
	switch {
	case ctx.Err() != nil && !errors.Is(cause, activities.ErrLoopStopped):
		return // dropped: the host's next holder resumes it
	case ctx.Err() != nil:
		// Stopped by its workflow: answered as cancelled. An agent run
		// answers with its partial output (a CanceledError with details).
		var canceled *temporal.CanceledError
		if !errors.As(err, &canceled) {
			err = temporal.NewCanceledError()
		}
		result = nil
	case !l.awaitConfirmed(lp):
		return // dropped, or its activity is no longer open
	default:
		// The in-process feed hears the end first (a call answers at
		// once), then Temporal records it: a crash in between leaves the
		// loop to be resumed, and its answer is taken again. Until
		// Temporal has it, the end is kept for the wait to collect: an
		// answer Temporal refuses because it timed out the activity (a
		// stall of the host and its engine together) is what the run
		// records then, and the wait may ask while the answer still
		// queues or retries.
		l.keepEnd(lp.ref.key(), result, err)
		l.tell(lp.ref.WorkflowID, result, err)
		// The journal's entry goes before the end on disk: a kill in
		// between leaves the end, which a loop resumed from the entry
		// answers with.
		switch {
		case l.answer(lp.answering, lp.ref, result, err):
			l.forgetJournaled(lp.ref.key())
			l.forgetEnd(lp.ref.key(), true)
		case lp.answering.Err() == nil:
			l.forgetJournaled(lp.ref.key()) // its activity is gone
		default:
			// Dropped: the end stays on disk for this data dir's next
			// start. (The end of an adopted host's loop, released to its
			// owner, is on this worker's disk, not the owner's: there the
			// owner resumes the loop, as before ends were on disk.)
			l.forgetEnd(lp.ref.key(), false)
		}
		return
	}
	if l.answer(lp.answering, lp.ref, result, err) || lp.answering.Err() == nil {
		l.forgetJournaled(lp.ref.key())
	}
}

// keepEnd keeps a loop's end until Temporal records it (forgetEnd), or,
// when Temporal refuses it, for unrecordedTTL (on disk, for endFileTTL).
// It is on disk before it returns, so before any caller is told it.
func (l *loops) keepEnd(key loopKey, result any, err error) {
	if l.files != nil {
		if ferr := l.files.put(key, result, err); ferr != nil && !errors.Is(ferr, errNotKept) {
			l.logger.Warn("could not keep a loop's end on disk; it is kept in memory only", "workflow", key.workflowID, "error", ferr)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.pruned) >= unrecordedTTL {
		// Once per TTL, not per end: thousands of loops that end at once
		// are kept side by side while their answers queue.
		for k, u := range l.unrecorded {
			if now.Sub(u.at) >= unrecordedTTL {
				delete(l.unrecorded, k)
			}
		}
		l.pruned = now
	}
	l.unrecorded[key] = unrecordedEnd{result: result, err: err, at: now}
}

// forgetEnd drops a loop's kept end from memory: Temporal recorded it
// (recorded: from disk too), or the loop was dropped (the host's next
// holder resumes it; its next start on this data dir answers with the end
// on disk).
func (l *loops) forgetEnd(key loopKey, recorded bool) {
	if recorded && l.files != nil {
		l.files.remove(key)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.unrecorded, key)
}

// collect returns the end of the loop of a run whose activity Temporal
// ended by its timeout (see workflows.LoopAnswerActivityName): the end
// kept here, or, for a loop still running here, its end once it comes (a
// loop past its bound ends within its last sample's allowance). ok is
// false when this worker has none: then, and when ctx ends first, the
// run's loop is stopped here, so that it tells no caller an answer its
// run does not record.
func (l *loops) collect(ctx context.Context, key loopKey) (end unrecordedEnd, ok bool) {
	l.mu.Lock()
	end, kept := l.unrecorded[key]
	lp, running := l.running[key]
	l.mu.Unlock()
	if !kept && !running && l.files != nil {
		// Told by an earlier start of this host, killed before Temporal
		// recorded it.
		end, kept = l.files.get(key)
	}
	switch {
	case kept:
		return end, true
	case !running:
		l.stop(key)
		return unrecordedEnd{}, false
	}
	select {
	case <-lp.done:
	case <-ctx.Done():
		l.stop(key)
		return l.endOnDisk(key)
	}
	l.mu.Lock()
	end, kept = l.unrecorded[key]
	l.mu.Unlock()
	if !kept {
		// A loop resumed from the journal that ended without telling
		// (its activity was no longer open) leaves the end an earlier
		// start told, which is on disk.
		return l.endOnDisk(key)
	}
	return end, true
}

// endOnDisk is the end of a run kept on disk by an earlier start of this
// host, if any.
func (l *loops) endOnDisk(key loopKey) (unrecordedEnd, bool) {
	if l.files == nil {
		return unrecordedEnd{}, false
	}
	return l.files.get(key)
}

// knows reports whether this worker runs the loop of a run or keeps its
// end.
func (l *loops) knows(key loopKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, running := l.running[key]
	_, kept := l.unrecorded[key]
	return running || kept
}

// tell tells the observer a loop's end: its outcome, or its failure.
func (l *loops) tell(workflowID string, result any, err error) {
	if l.observer == nil {
		return
	}
	var appErr *temporal.ApplicationError
	switch event, ok := result.(workflows.WaitEvent); {
	case err == nil && ok:
		l.observer.Observe(workflowID, event)
	case errors.As(err, &appErr):
		l.observer.Observe(workflowID, workflows.WaitFailed{Message: appErr.Message()})
	}
}

// answer records the loop's end in Temporal, trying until Temporal takes
// it, says the activity is gone (its wait was cancelled, or timed out), or
// ctx ends (the loop was dropped: the host's next holder resumes it and
// answers). It reports whether Temporal recorded this answer.
func (l *loops) answer(ctx context.Context, ref loopRef, result any, err error) bool {
	select {
	case l.answering <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-l.answering }()
	delay := newRetryDelay()
	for {
		cerr := l.client.CompleteActivityByID(ctx, l.namespace, ref.WorkflowID, ref.RunID, ref.ActivityID, result, err)
		if cerr == nil {
			return true
		}
		if gone(cerr) {
			l.logger.Debug("the loop's activity is gone; its answer is dropped", "workflow", ref.WorkflowID, "error", cerr)
			return false
		}
		if ctx.Err() != nil {
			l.logger.Info("a dropped loop's answer is left to the host's next holder", "workflow", ref.WorkflowID)
			return false
		}
		l.logger.Warn("could not answer a loop's activity; trying again", "workflow", ref.WorkflowID, "error", cerr)
		select {
		case <-time.After(delay.next()):
		case <-ctx.Done():
		}
	}
}

// gone reports whether Temporal refused an answer because the activity or
// its workflow no longer exists (or no longer takes it).
func gone(err error) bool {
	var notFound *serviceerror.NotFound
	var invalid *serviceerror.InvalidArgument
	var failed *serviceerror.FailedPrecondition
	return errors.As(err, &notFound) || errors.As(err, &invalid) || errors.As(err, &failed)
}

// stop ends the loop of a workflow run, as its workflow asked: it answers
// cancelled. A stop that finds no loop is remembered for a while, so a
// loop resumed just after starts stopped.
func (l *loops) stop(key loopKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lp, ok := l.running[key]; ok {
		l.logger.Info("stopping a loop, as its wait asked", "workflow", key.workflowID, "run", key.runID)
		lp.cancel(activities.ErrLoopStopped)
		return
	}
	now := time.Now()
	for k, at := range l.stopped {
		if now.Sub(at) >= stoppedTTL {
			delete(l.stopped, k)
		}
	}
	l.stopped[key] = now
}

// has reports whether the loop of a workflow run runs here.
func (l *loops) has(key loopKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.running[key]
	return ok
}

// hasWorkflow reports whether a loop of any run of a workflow runs here.
func (l *loops) hasWorkflow(workflowID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key := range l.running {
		if key.workflowID == workflowID {
			return true
		}
	}
	return false
}

// of lists the loops running here on host's queue.
func (l *loops) of(host string) []loopRef {
	l.mu.Lock()
	defer l.mu.Unlock()
	var refs []loopRef
	for _, lp := range l.running {
		if lp.ref.Host == host {
			refs = append(refs, lp.ref)
		}
	}
	return refs
}

// drop ends, without an answer, the loops of host (all hosts: "") for
// cause, and waits for them to return.
func (l *loops) drop(host string, cause error) {
	l.mu.Lock()
	var dropped []*runningLoop
	for _, lp := range l.running {
		if host == "" || lp.ref.Host == host {
			lp.cancel(cause)
			dropped = append(dropped, lp)
		}
	}
	l.mu.Unlock()
	// Answers under way get dropAnswerGrace to land; then they are left
	// to the host's next holder.
	abandon := time.AfterFunc(dropAnswerGrace, func() {
		for _, lp := range dropped {
			lp.abandon()
		}
	})
	defer abandon.Stop()
	for _, lp := range dropped {
		<-lp.done
	}
}

// dropAnswerGrace is how long a drop waits for the answers of loops that
// had ended before it.
const dropAnswerGrace = 2 * time.Second
