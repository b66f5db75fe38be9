package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/activities/agentstream"
	"github.com/durawait/durawait/internal/agentproc"
	"github.com/durawait/durawait/internal/childenv"
	"github.com/durawait/durawait/workflows"
)

// Signaler delivers a signal to a workflow; the Temporal client is one.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// AgentRunner runs agent CLIs for AgentInvocation workflows on this host.
type AgentRunner struct {
	// Providers are the CLIs that may run, by provider name.
	Providers map[string]AgentProvider
	// AllowedRoots bound every cwd, checked again here after resolving links.
	AllowedRoots []string
	// SpoolDir holds one folder per invocation this host claims.
	SpoolDir string
	// Host is this worker's host, which its claims name, and Machine the
	// machine it runs on.
	Host, Machine string
	// Supervisor is the command that runs agentproc.Supervise.
	Supervisor []string
	// Signals reach the invocation's workflow (blockers).
	Signals Signaler
	// Observer, when set, is told of each change of a run's state
	// (workflows.AgentProgress), in process.
	Observer Observer
	// CancelGrace is the SIGTERM to SIGKILL delay.
	CancelGrace time.Duration
	// MaxOutput caps each output file of a run, in bytes (0: uncapped).
	MaxOutput int64
	// UnreachableAfter is how long a CLI may retry its model's API (or
	// wait for the network), saying nothing else, before it is blocked
	// (network_unavailable); 0: never.
	UnreachableAfter time.Duration
	// PollInterval is how often the spooled output is read when the spool
	// cannot be watched (with a watch, a run reads it as it changes, and
	// every watchedPollInterval besides).
	PollInterval time.Duration
	Logger       *slog.Logger

	mu   sync.Mutex
	live map[string]workflows.AgentLive // by invocation: what its CLI does now
	// turns carries each answer (the run's next turn) to the run that
	// follows its invocation's CLI here, by invocation.
	turns map[string]*turnFeed
	// spool tells the runs when their spool folders change.
	spool spoolWatch
}

// AgentProvider says how to run one agent CLI. Every argument is an element
// of an argument vector (no shell); "{prompt}", "{model}" and "{session_id}"
// in an element are replaced by the call's values.
type AgentProvider struct {
	// Format names the parser of the CLI's output: one of
	// workflows.AgentFormats.
	Format string
	// Command is the CLI and its arguments. Without "{prompt}" in it, the
	// prompt is written to the CLI's stdin.
	Command []string
	// Resume is inserted before the prompt when the call has a session ID.
	Resume []string
	// Model is inserted before the prompt when the call has a model.
	Model []string
	// Env is added to the CLI's environment, which is otherwise minimal
	// (childenv.BaseNames of durawait's).
	Env map[string]string
	// Inherit passes more of durawait's environment to the CLI.
	Inherit childenv.Inherit
}

// ResumePrompt is sent when a lost run is resumed in its provider session.
const ResumePrompt = "durawait restarted this run after the machine lost it; continue the task where you left off."

// ErrLoopStopped is the cause (context.Cause) of a loop's context ended
// because its workflow stopped it (cancel_agent, an operator's cancel): an
// agent run then stops its CLI. Any other end of the context (a released
// host, a stopping worker) leaves the CLI running, for the host's next
// holder to follow.
var ErrLoopStopped = errors.New("stopped by its workflow")

// ClaimAgentHost answers a claim with this host and its spool folder: the
// run and its output stay here.
func (r *AgentRunner) ClaimAgentHost(context.Context) (workflows.AgentHostClaim, error) {
	return workflows.AgentHostClaim{Host: r.Host, Machine: r.Machine, Spool: r.SpoolDir}, nil
}

// AgentRun is one run for this host to start or follow.
type AgentRun struct {
	Input workflows.RunAgentInput
	// Signalled are the blocker categories the invocation already has (a
	// run this host resumes: from the workflow's history), which are not
	// signalled again.
	Signalled []string
	// OnSignalled, when set, is told each blocker's key
	// (workflows.AgentBlocker.Key) once the workflow took its signal (the
	// host journals it: a run resumed after a restart does not signal it
	// again).
	OnSignalled func(key string)
	// Turns are the answers the run had taken before this run of it on
	// this host began (a run resumed: from the journal or the workflow's
	// history); it goes on from the last.
	Turns []workflows.AgentTurn
}

// Run runs (or re-attaches to) one invocation's CLI until it exits or its
// deadline (agents.max_run_sec) passes, signalling each new blocker
// category to the workflow. A context ended with ErrLoopStopped stops the
// CLI's process group and answers cancelled, with what it had said; any
// other end of ctx leaves the CLI running and returns ctx's error.
func (r *AgentRunner) Run(ctx context.Context, run AgentRun) (workflows.AgentFinal, error) {
	in := run.Input
	prov, ok := r.Providers[in.Spec.Provider]
	if !ok {
		return workflows.AgentFinal{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("provider %q is not configured on this worker", in.Spec.Provider), workflows.ErrTypeAgentUnknownConfig, nil)
	}
	spool := in.Spool
	if spool == "" {
		spool = r.SpoolDir
	}
	base := filepath.Join(spool, spoolName(in.InvocationID))
	turns := run.Turns
	if in.Turn != nil {
		turns = append(slices.Clone(turns), *in.Turn)
	}
	turn := lastTurn(turns)
	feed := r.listen(in.InvocationID, turn.Turn)
	defer r.forget(in.InvocationID)

	dir := turnDir(base, turn.Turn)
	if errors.Is(context.Cause(ctx), ErrLoopStopped) && !agentproc.Running(dir) {
		// Cancelled before this run began (a cancel_agent that came while
		// its host was down): no CLI is started or resumed just to be
		// stopped, and one of a turn before is stopped.
		for t := range turn.Turn {
			agentproc.Terminate(turnDir(base, t), r.CancelGrace)
		}
		return workflows.AgentFinal{}, ctx.Err()
	}
	for {
		if errors.Is(context.Cause(ctx), ErrLoopStopped) && turn.Turn > 0 && !agentproc.Started(turnDir(base, turn.Turn)) {
			// Cancelled as the answer's turn was to start: it is not
			// started, and the CLI before it is stopped.
			for t := range turn.Turn {
				agentproc.Terminate(turnDir(base, t), r.CancelGrace)
			}
			return workflows.AgentFinal{}, ctx.Err()
		}
		if final, done, err := r.begin(ctx, base, prov, in, turn); done || err != nil {
			final.Turn = turn.Turn
			return final, err
		}
		final, err, next := r.follow(ctx, run, turn.Turn, turnDir(base, turn.Turn), prov, feed)
		if next == nil {
			return final, err
		}
		turn = *next
	}
}

// begin starts the CLI of the run's turn in its spool folder (base for the
// first; an answer's turn in a folder of its own), or finds it started
// before. An answer's CLI is started once the CLIs of the turns before it
// are stopped, in the provider session the answer resumes. done is true
// when the run has ended without a CLI to follow (one lost that cannot be
// resumed).
func (r *AgentRunner) begin(ctx context.Context, base string, prov AgentProvider, in workflows.RunAgentInput, turn workflows.AgentTurn) (final workflows.AgentFinal, done bool, err error) {
	dir := turnDir(base, turn.Turn)
	launch, err := r.launchOnce(dir)
	if err != nil {
		return workflows.AgentFinal{}, true, err
	}
	if !launch {
		if agentproc.Lost(dir) {
			// The supervisor is gone without an exit status: the machine
			// lost it. Its spooled output names the provider session to
			// resume (or, for an answer's turn that named none yet, the
			// answer's).
			return r.resumeLost(dir, prov, in, turn)
		}
		return workflows.AgentFinal{}, false, nil
	}
	spec := in.Spec
	if turn.Turn > 0 {
		for t := range turn.Turn {
			agentproc.Terminate(turnDir(base, t), r.CancelGrace)
		}
		if errors.Is(context.Cause(ctx), ErrLoopStopped) {
			// Cancelled while the CLI before it stopped: the answer's
			// CLI does not start.
			return workflows.AgentFinal{}, true, ctx.Err()
		}
		spec.SessionID, spec.Prompt = turn.SessionID, turn.Answer
		r.logger().Info("agent blocker answered; resuming its session", "invocation", in.InvocationID, "turn", turn.Turn, "session", turn.SessionID)
	}
	if err := r.launch(dir, in.InvocationID, prov, spec); err != nil {
		return workflows.AgentFinal{}, true, err
	}
	return workflows.AgentFinal{}, false, nil
}

// canStart reports whether the CLI of the answer's turn can be started:
// checked before the running CLI is stopped for it, so an answer the CLI
// could not take (its prompt would be read as an option, or is longer than
// an argument may be) leaves the run as it is, logged.
func (r *AgentRunner) canStart(prov AgentProvider, spec workflows.AgentSpec, t workflows.AgentTurn) bool {
	spec.SessionID, spec.Prompt = t.SessionID, t.Answer
	err := CheckPromptPlacement(spec.Provider, prov, spec.Prompt)
	if err == nil {
		argv, _ := BuildArgv(prov, spec)
		err = CheckArgvLimit(spec.Provider, argv)
	}
	if err != nil {
		r.logger().Error("an answer cannot start the agent's next turn; the run goes on as it is", "invocation", t.InvocationID, "turn", t.Turn, "error", err)
		return false
	}
	return true
}

// turnDir is the spool folder of a run's turn: base for the first, and
// base.turn-N for the CLI started by the N-th answer.
func turnDir(base string, turn int) string {
	if turn == 0 {
		return base
	}
	return fmt.Sprintf("%s%s%d", base, turnSuffix, turn)
}

// turnSuffix separates an invocation's spool folder name from its turn.
const turnSuffix = ".turn-"

// lastTurn is the latest of turns (the zero turn: the first CLI).
func lastTurn(turns []workflows.AgentTurn) workflows.AgentTurn {
	var last workflows.AgentTurn
	for _, t := range turns {
		if t.Turn > last.Turn {
			last = t
		}
	}
	return last
}

// turnFeed carries the answers to a run that follows its CLI.
type turnFeed struct {
	next chan workflows.AgentTurn
	// turn is the latest turn given to the run.
	turn int
}

// listen registers the run of invocationID, at turn, for its answers.
func (r *AgentRunner) listen(invocationID string, turn int) <-chan workflows.AgentTurn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.turns == nil {
		r.turns = map[string]*turnFeed{}
	}
	f := &turnFeed{next: make(chan workflows.AgentTurn, 4), turn: turn}
	r.turns[invocationID] = f
	return f.next
}

// Answer gives an answer (the run's next turn) to the run that follows the
// invocation's CLI here: it stops the CLI and starts it again in its
// session with the answer as its prompt. A turn the run has had already is
// taken as given; with no run of the invocation here, Answer fails (its
// activity is retried until the run's host follows it again).
func (r *AgentRunner) Answer(t workflows.AgentTurn) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.turns[t.InvocationID]
	switch {
	case f == nil:
		return fmt.Errorf("no run of invocation %s follows its CLI on this host now", t.InvocationID)
	case t.Turn <= f.turn:
		return nil
	}
	select {
	case f.next <- t:
		f.turn = t.Turn
		return nil
	default:
		return fmt.Errorf("the run of invocation %s has answers queued; try again", t.InvocationID)
	}
}

// launchOnce claims the launch of the run in dir: true when this call
// created the folder (the CLI must start), false when a launch was made
// before (the CLI runs, ran, or was lost). Creating the folder is the
// claim, so two hosts that both resume a run on one machine never start
// its CLI twice.
func (r *AgentRunner) launchOnce(dir string) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return false, fmt.Errorf("create the spool folder: %w", err)
	}
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("create the run's spool folder: %w", err)
	}
	// Launched before: give a launch under way the moment it needs to
	// record its supervisor.
	deadline := time.Now().Add(launchRecordWait)
	for !agentproc.Started(dir) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// A launch that died before its supervisor started is made now.
	return !agentproc.Started(dir), nil
}

// launchRecordWait bounds how long a run found launched waits for its
// supervisor's record to appear.
const launchRecordWait = 5 * time.Second

// resumeLost handles a run whose supervisor is gone without an exit
// status: it resumes the run's provider session when the spooled output
// names one and the provider can resume (done false: follow it), and
// answers failed otherwise (done). It holds the spool's lock, and acts
// only when the run is still lost under it: two followers of one run
// (its host back from a crash and the worker handing it back) resume it
// once, the second following the first's resumption.
func (r *AgentRunner) resumeLost(dir string, prov AgentProvider, in workflows.RunAgentInput, turn workflows.AgentTurn) (final workflows.AgentFinal, done bool, err error) {
	unlock, err := agentproc.LockSpool(filepath.Dir(dir))
	if err != nil {
		return workflows.AgentFinal{}, true, err
	}
	defer unlock()
	if !agentproc.Lost(dir) {
		return workflows.AgentFinal{}, false, nil
	}
	session, reply := spooledSession(dir, prov.Format)
	prompt := ResumePrompt
	if session == "" && turn.Turn > 0 {
		// The answer's CLI was lost before it named its session: the
		// answer is given again, in the blocker's session.
		session, prompt = turn.SessionID, turn.Answer
	}
	if session == "" || len(prov.Resume) == 0 {
		return workflows.AgentFinal{
			Status: workflows.AgentFailed, Output: reply, SessionID: session,
			Error: &workflows.AgentError{Code: workflows.ErrCodeWorkerLost,
				Message: "the CLI process was lost with its machine and cannot be resumed (no provider session ID)"},
		}, true, nil
	}
	r.logger().Warn("agent run lost; resuming its provider session", "invocation", in.InvocationID, "session", session)
	if err := os.Rename(dir, dir+".lost."+time.Now().UTC().Format("20060102T150405")); err != nil {
		return workflows.AgentFinal{}, true, fmt.Errorf("set the lost run aside: %w", err)
	}
	spec := in.Spec
	spec.SessionID, spec.Prompt = session, prompt
	if err := os.Mkdir(dir, 0o700); err != nil {
		return workflows.AgentFinal{}, true, fmt.Errorf("create the resumed run's spool folder: %w", err)
	}
	if err := r.launch(dir, in.InvocationID, prov, spec); err != nil {
		return workflows.AgentFinal{}, true, err
	}
	return workflows.AgentFinal{}, false, nil
}

// spooledSession reads the provider session ID and the latest reply from
// a run's spooled output.
func spooledSession(dir, format string) (session, reply string) {
	parser, err := agentstream.New(format, time.Now)
	if err != nil {
		return "", ""
	}
	var st agentstream.State
	now := time.Now()
	for _, line := range agentproc.ReadLines(filepath.Join(dir, agentproc.StdoutFile)) {
		for _, ev := range parser.Parse(line) {
			st.Apply(ev, now)
		}
	}
	return st.Live.SessionID, st.Live.Reply
}

// Live is what the invocation's CLI is doing now, as its run on this host
// last read it; false when no run of it follows its CLI here.
func (r *AgentRunner) Live(invocationID string) (workflows.AgentLive, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	live, ok := r.live[invocationID]
	return live, ok
}

// setLive records what the invocation's CLI is doing now.
func (r *AgentRunner) setLive(invocationID string, live workflows.AgentLive) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live == nil {
		r.live = map[string]workflows.AgentLive{}
	}
	r.live[invocationID] = live.Tail()
}

// forget drops the invocation's live state and its answers' feed once
// its run here ended.
func (r *AgentRunner) forget(invocationID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, invocationID)
	delete(r.turns, invocationID)
}

func (r *AgentRunner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}

// launch checks the cwd where it will be used and starts the CLI.
func (r *AgentRunner) launch(dir, invocationID string, prov AgentProvider, spec workflows.AgentSpec) error {
	// The folder names its invocation (its name maps IDs many to one): a
	// host back from a crash reads it to find the CLIs whose invocation
	// ended meanwhile (Unfollowed).
	if err := os.WriteFile(filepath.Join(dir, invocationFile), []byte(invocationID), 0o600); err != nil {
		return fmt.Errorf("record the run's invocation: %w", err)
	}
	cwd, err := filepath.EvalSymlinks(spec.Cwd)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("cwd %q: %v", spec.Cwd, err), workflows.ErrTypeAgentInvalidCwd, nil)
	}
	inside := false
	for _, root := range r.AllowedRoots {
		if real, err := filepath.EvalSymlinks(root); err == nil && workflows.InsideRoot(cwd, real) {
			inside = true
		}
	}
	if !inside {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cwd %q resolves to %q, outside the allowed roots", spec.Cwd, cwd), workflows.ErrTypeAgentInvalidCwd, nil)
	}
	if err := CheckPromptPlacement(spec.Provider, prov, spec.Prompt); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeAgentStartFailed, nil)
	}
	argv, stdin := BuildArgv(prov, spec)
	if err := CheckArgvLimit(spec.Provider, argv); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeAgentStartFailed, nil)
	}
	if err := agentproc.Start(agentproc.Launch{
		Dir: dir, Argv: argv, Cwd: cwd, Env: agentEnv(os.Environ(), prov), Stdin: stdin, Supervisor: r.Supervisor,
		MaxOutput: r.MaxOutput,
	}); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeAgentStartFailed, err)
	}
	return nil
}

// BuildArgv assembles a provider's argument vector for spec. The model and
// resume arguments go just before the prompt's element (before the "--" that
// ends the options ahead of it, when there is one), or at the end; the prompt
// is returned as stdin when the command has no "{prompt}".
func BuildArgv(p AgentProvider, spec workflows.AgentSpec) (argv []string, stdin []byte) {
	var extra []string
	if spec.Model != "" {
		extra = append(extra, p.Model...)
	}
	if spec.SessionID != "" {
		extra = append(extra, p.Resume...)
	}
	at := promptIndex(p.Command)
	if at == len(p.Command) {
		stdin = []byte(spec.Prompt)
	} else if at > 0 && p.Command[at-1] == "--" {
		at--
	}
	parts := append(append(append([]string{}, p.Command[:at]...), extra...), p.Command[at:]...)
	r := strings.NewReplacer("{prompt}", spec.Prompt, "{model}", spec.Model, "{session_id}", spec.SessionID)
	for _, a := range parts {
		argv = append(argv, r.Replace(a))
	}
	return argv, stdin
}

// promptIndex is the index of the command's element holding "{prompt}", or
// len(command) when the prompt goes to stdin.
func promptIndex(command []string) int {
	for i, a := range command {
		if strings.Contains(a, "{prompt}") {
			return i
		}
	}
	return len(command)
}

// CheckPromptPlacement refuses a prompt that the CLI would read as an option:
// one starting with '-' that becomes an argument of its own, with no "--"
// ending the options before it. The presets all put a "--" there or attach
// the prompt to its option ("--prompt={prompt}"); a custom command may not.
func CheckPromptPlacement(provider string, p AgentProvider, prompt string) error {
	at := promptIndex(p.Command)
	if at == len(p.Command) || p.Command[at] != "{prompt}" || !strings.HasPrefix(prompt, "-") {
		return nil
	}
	if slices.Contains(p.Command[:at], "--") {
		return nil
	}
	return fmt.Errorf("the prompt starts with '-' and provider %q's command has no \"--\" before \"{prompt}\", so the CLI would read it as an option; "+
		"add \"--\" before \"{prompt}\" in agents.providers.%s.command (if the CLI accepts it), or reword the prompt", provider, provider)
}

// agentEnv is a provider's CLI's environment: childenv's base, its
// AgentNames, the provider's inherit_env and its env.
func agentEnv(parent []string, p AgentProvider) []string {
	inherit := childenv.Inherit{All: p.Inherit.All, Names: append(slices.Clone(childenv.AgentNames), p.Inherit.Names...)}
	return childenv.Build(parent, inherit, p.Env)
}

// MaxArgBytes is the longest single argument Linux passes to a program
// (MAX_ARG_STRLEN: 32 pages of 4 KiB, its terminating NUL included). Other
// systems bound the whole argument list instead; the check is the same
// there, and conservative.
const MaxArgBytes = 128 << 10

// CheckArgvLimit refuses an argument vector the kernel would refuse at exec
// (E2BIG), most likely a long prompt given as an argument: it names the
// limit and the way around it (the prompt on stdin).
func CheckArgvLimit(provider string, argv []string) error {
	for i, a := range argv {
		if len(a)+1 > MaxArgBytes {
			return fmt.Errorf("argument %d of provider %q's command is %d bytes, over the %d KiB a single argument may have on Linux "+
				"(most likely the prompt): shorten the prompt, or configure the provider to read it on stdin "+
				"(a command without \"{prompt}\" in agents.providers.%s.command gets the prompt on its standard input)",
				i, provider, len(a), MaxArgBytes>>10, provider)
		}
	}
	return nil
}

// spoolName makes an invocation ID a folder name.
func spoolName(id string) string {
	return strings.NewReplacer("/", "_", "..", "_").Replace(id)
}

// invocationFile, in a run's spool folder, holds its invocation ID.
const invocationFile = "invocation"

// Unfollowed lists the invocations whose CLI still runs under this host's
// spool (its supervisor alive, no exit recorded), whether or not a run of
// this process follows it: the caller tells them apart. A folder that
// does not name its invocation is left out.
func (r *AgentRunner) Unfollowed() []string {
	entries, err := os.ReadDir(r.SpoolDir)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(r.SpoolDir, e.Name())
		id, err := os.ReadFile(filepath.Join(dir, invocationFile))
		if err != nil || !isTurnOf(e.Name(), spoolName(string(id))) {
			continue // none, or a run set aside (".lost.<time>")
		}
		if _, exited := agentproc.ExitCode(dir); !exited && agentproc.Running(dir) && !slices.Contains(ids, string(id)) {
			ids = append(ids, string(id))
		}
	}
	return ids
}

// isTurnOf reports whether the spool folder name is one of the run whose
// first turn's folder is named base (base, or base.turn-N).
func isTurnOf(name, base string) bool {
	if name == base {
		return true
	}
	n, ok := strings.CutPrefix(name, base+turnSuffix)
	if !ok || n == "" {
		return false
	}
	return strings.Trim(n, "0123456789") == ""
}

// Stop stops the CLIs of an invocation no run follows (SIGTERM, SIGKILL
// after CancelGrace), of every turn: see Unfollowed.
func (r *AgentRunner) Stop(invocationID string) {
	base := spoolName(invocationID)
	entries, _ := os.ReadDir(r.SpoolDir)
	for _, e := range entries {
		if e.IsDir() && isTurnOf(e.Name(), base) {
			agentproc.Terminate(filepath.Join(r.SpoolDir, e.Name()), r.CancelGrace)
		}
	}
}

// watchedPollInterval is how often a run whose spool is watched reads it
// anyway (a change the watch missed).
const watchedPollInterval = 250 * time.Millisecond

// maxLine bounds one output line; longer lines are dropped.
const maxLine = 8 << 20

// follow tails the spooled output of the run's turn (in dir) until the CLI
// exits, its deadline passes, ctx ends, or an answer starts the next turn
// (next: the CLI is left for begin to stop).
func (r *AgentRunner) follow(ctx context.Context, run AgentRun, turn int, dir string, prov AgentProvider, answers <-chan workflows.AgentTurn) (final workflows.AgentFinal, err error, next *workflows.AgentTurn) {
	in := run.Input
	id := in.InvocationID
	parser, err := agentstream.New(prov.Format, time.Now)
	if err != nil {
		return workflows.AgentFinal{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeAgentUnknownConfig, nil), nil
	}
	var st agentstream.State
	sent := map[string]bool{}
	for _, key := range run.Signalled {
		sent[key] = true
	}
	// Blockers signalled before this run on this host (a resumed run)
	// were reported then.
	progress := progressReporter{observer: r.Observer, id: id, blockers: maps.Clone(sent)}
	blocker := func(b workflows.AgentError) workflows.AgentBlocker {
		session := st.Live.SessionID
		return workflows.AgentBlocker{AgentError: b, Turn: turn, SessionID: session,
			Resumable: session != "" && len(prov.Resume) > 0 && workflows.Answerable(b.Code)}
	}
	var pending []workflows.AgentError
	var offset int64
	var partial []byte
	interval := r.PollInterval
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	changed, unfollow := r.spool.follow(dir)
	defer unfollow()
	if changed != nil {
		interval = watchedPollInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var deadline <-chan time.Time
	if !in.Deadline.IsZero() {
		timer := time.NewTimer(time.Until(in.Deadline))
		defer timer.Stop()
		deadline = timer.C
	}

	// dropping is true past a cut of the output (its cap), until the end
	// of the line the cut began in.
	dropping := false
	feed := func(final bool) {
		for {
			chunk, next, skipped := agentproc.ReadOutput(filepath.Join(dir, agentproc.StdoutFile), offset)
			if skipped {
				partial, dropping = partial[:0], true
			}
			if next == offset {
				break
			}
			offset = next
			if dropping {
				i := bytes.IndexByte(chunk, '\n')
				if i < 0 {
					continue
				}
				chunk, dropping = chunk[i+1:], false
			}
			partial = append(partial, chunk...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				r.apply(parser, &st, partial[:i], &pending)
				partial = partial[i+1:]
			}
			if len(partial) > maxLine {
				partial = partial[:0]
			}
		}
		if final && len(bytes.TrimSpace(partial)) > 0 {
			r.apply(parser, &st, partial, &pending)
			partial = partial[:0]
		}
	}

	for {
		code, exited := agentproc.ExitCode(dir)
		feed(exited)
		if b := st.Unreachable(time.Now(), r.UnreachableAfter); b != nil && !exited {
			pending = append(pending, *b)
		}
		pending = r.signal(ctx, run, pending, sent, blocker)
		progress.report(st.Live.Activity, sent, code, exited)
		r.setLive(id, st.Live)
		if exited {
			select {
			case t := <-answers:
				if t.Turn > turn && ctx.Err() == nil && r.canStart(prov, in.Spec, t) {
					// Answered as it exited: the answer's turn runs.
					return workflows.AgentFinal{}, nil, &t
				}
			default:
			}
			if f, ok := parser.(agentstream.Finisher); ok {
				st.Apply(agentstream.Event{Final: f.Finish()}, time.Now())
			}
			out := st.Outcome(code)
			agentstream.Explain(&out, prov.Format, code, readTail(filepath.Join(dir, agentproc.StderrFile), agentstream.StderrTailWindow))
			out.Turn = turn
			return out, nil, nil
		}
		select {
		case t := <-answers:
			if t.Turn > turn && ctx.Err() == nil && r.canStart(prov, in.Spec, t) {
				return workflows.AgentFinal{}, nil, &t
			}
		case <-tick.C:
		case <-changed:
		case <-deadline:
			// agents.max_run_sec: stop the CLI; what it had said is the
			// output, and its session can be resumed.
			agentproc.Terminate(dir, r.CancelGrace)
			feed(true)
			return workflows.AgentFinal{Status: workflows.AgentFailed, Output: st.Live.Reply, SessionID: st.Live.SessionID, Turn: turn,
				Error: &workflows.AgentError{Code: workflows.ErrCodeTimeout,
					Message: fmt.Sprintf("the run exceeded agents.max_run_sec (%d s)", int64(in.MaxRun/time.Second))}}, nil, nil
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), ErrLoopStopped) {
				// The host was released, or the worker stops: leave the
				// CLI running for the host's next holder.
				return workflows.AgentFinal{}, ctx.Err(), nil
			}
			agentproc.Terminate(dir, r.CancelGrace)
			feed(true)
			out := st.Outcome(0)
			out.Status, out.Error, out.Turn = workflows.AgentCancelled, nil, turn
			return workflows.AgentFinal{}, temporal.NewCanceledError(out), nil
		}
	}
}

// apply parses one line and queues a blocker that is new to this run.
func (r *AgentRunner) apply(p agentstream.Parser, st *agentstream.State, line []byte, pending *[]workflows.AgentError) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	now := time.Now()
	for _, ev := range p.Parse(line) {
		if b := st.Apply(ev, now); b != nil {
			*pending = append(*pending, *b)
		}
	}
}

// signal sends the pending blockers the workflow has not had yet (as
// blocker makes each, with its turn and session); failures stay pending
// for the next round.
func (r *AgentRunner) signal(ctx context.Context, run AgentRun, pending []workflows.AgentError, sent map[string]bool,
	blocker func(workflows.AgentError) workflows.AgentBlocker) []workflows.AgentError {
	id := run.Input.InvocationID
	var left []workflows.AgentError
	for _, e := range pending {
		b := blocker(e)
		if sent[b.Key()] {
			continue
		}
		if err := r.Signals.SignalWorkflow(ctx, id, "", workflows.AgentBlockerSignal, b); err != nil {
			r.logger().Warn("could not signal a blocker; will retry", "invocation", id, "error", err)
			left = append(left, e)
			continue
		}
		sent[b.Key()] = true
		if run.OnSignalled != nil {
			run.OnSignalled(b.Key())
		}
	}
	return left
}

// readTail returns at most the last n bytes of the file at path ("" when it
// cannot be read).
func readTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// progressReporter tells an Observer of each change of a run's state: the
// CLI's activity, a blocker not reported before, its exit.
type progressReporter struct {
	observer Observer
	id       string
	step     int
	activity string
	blockers map[string]bool
}

// report observes the run's state and tells the observer what changed.
func (p *progressReporter) report(act *workflows.AgentActivity, blockers map[string]bool, exitCode int, exited bool) {
	if p.observer == nil {
		return
	}
	if p.blockers == nil {
		p.blockers = map[string]bool{}
	}
	var news []string
	for code := range blockers {
		if !p.blockers[code] {
			news = append(news, code)
			p.blockers[code] = true
		}
	}
	sort.Strings(news)
	for _, key := range news {
		code, turn, answered := strings.Cut(key, "@")
		if answered {
			code += " (after answer " + turn + ")"
		}
		p.tell("execution blocker: " + code)
	}
	if desc := describeActivity(act); desc != "" && desc != p.activity {
		p.activity = desc
		p.tell(desc)
	}
	if exited {
		p.tell(fmt.Sprintf("the CLI exited with status %d", exitCode))
	}
}

func (p *progressReporter) tell(msg string) {
	p.step++
	p.observer.Observe(p.id, workflows.AgentProgress{Step: p.step, Message: msg})
}

// describeActivity says what the CLI is doing, for a person.
func describeActivity(act *workflows.AgentActivity) string {
	if act == nil {
		return ""
	}
	msg := "activity: " + act.Kind
	if act.ToolName != "" {
		msg += " " + act.ToolName
	}
	if act.State != "" {
		msg += " (" + act.State + ")"
	}
	return msg
}

// CanFollow reports whether this host can run or follow a run claimed on
// another host (one it adopted): one on this machine, of a provider it
// has. A run it cannot follow waits for its own host to come back.
func (r *AgentRunner) CanFollow(in workflows.RunAgentInput) bool {
	_, ok := r.Providers[in.Spec.Provider]
	return ok && in.Machine == r.Machine
}
