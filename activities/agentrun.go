package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/activities/agentstream"
	"github.com/durawait/durawait/internal/agentproc"
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
	// SpoolDir holds one folder per invocation.
	SpoolDir string
	// HostQueue is this host's task queue, which RunAgent is scheduled on.
	HostQueue string
	// Supervisor is the command that runs agentproc.Supervise.
	Supervisor []string
	// Signals reach the invocation's workflow (blockers).
	Signals Signaler
	// Observer, when set, is told of each change of a run's state
	// (workflows.AgentProgress), in process.
	Observer Observer
	// CancelGrace is the SIGTERM to SIGKILL delay.
	CancelGrace time.Duration
	// PollInterval is how often the spooled output is read.
	PollInterval time.Duration
	Logger       *slog.Logger
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
	// Env is added to the CLI's environment.
	Env map[string]string
}

// ResumePrompt is sent when a lost run is resumed in its provider session.
const ResumePrompt = "durawait restarted this run after the machine lost it; continue the task where you left off."

// ClaimAgentHost returns this host's task queue: the run and its spool stay here.
func (r *AgentRunner) ClaimAgentHost(context.Context) (string, error) {
	return r.HostQueue, nil
}

// RunAgent runs (or re-attaches to) one invocation's CLI until it exits,
// signalling each new blocker category to the workflow and heartbeating what
// the CLI is doing. Cancelling the activity stops the CLI's process group.
func (r *AgentRunner) RunAgent(ctx context.Context, in workflows.RunAgentInput) (workflows.AgentFinal, error) {
	prov, ok := r.Providers[in.Spec.Provider]
	if !ok {
		return workflows.AgentFinal{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("provider %q is not configured on this worker", in.Spec.Provider), workflows.ErrTypeAgentUnknownConfig, nil)
	}
	dir := filepath.Join(r.SpoolDir, spoolName(in.InvocationID))
	var live workflows.AgentLive
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &live)
	}

	_, exited := agentproc.ExitCode(dir)
	switch {
	case exited || agentproc.Running(dir):
		// A run we (or an earlier attempt) started: re-attach.
	case agentproc.Started(dir):
		// The supervisor is gone without an exit status: the machine lost it.
		if live.SessionID == "" || len(prov.Resume) == 0 {
			return workflows.AgentFinal{
				Status: workflows.AgentFailed, Output: live.Reply, SessionID: live.SessionID,
				Error: &workflows.AgentError{Code: workflows.ErrCodeWorkerLost,
					Message: "the CLI process was lost with its worker and cannot be resumed (no provider session ID)"},
			}, nil
		}
		r.logger().Warn("agent run lost; resuming its provider session", "invocation", in.InvocationID, "session", live.SessionID)
		if err := os.Rename(dir, dir+".lost."+time.Now().UTC().Format("20060102T150405")); err != nil {
			return workflows.AgentFinal{}, fmt.Errorf("set the lost run aside: %w", err)
		}
		spec := in.Spec
		spec.SessionID, spec.Prompt = live.SessionID, ResumePrompt
		if err := r.launch(dir, prov, spec); err != nil {
			return workflows.AgentFinal{}, err
		}
	default:
		if err := r.launch(dir, prov, in.Spec); err != nil {
			return workflows.AgentFinal{}, err
		}
	}
	return r.follow(ctx, in.InvocationID, dir, prov.Format, live.Blockers)
}

func (r *AgentRunner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}

// launch checks the cwd where it will be used and starts the CLI.
func (r *AgentRunner) launch(dir string, prov AgentProvider, spec workflows.AgentSpec) error {
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
	env := make([]string, 0, len(prov.Env))
	for k, v := range prov.Env {
		env = append(env, k+"="+v)
	}
	if err := agentproc.Start(agentproc.Launch{
		Dir: dir, Argv: argv, Cwd: cwd, Env: env, Stdin: stdin, Supervisor: r.Supervisor,
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

// spoolName makes an invocation ID a folder name.
func spoolName(id string) string {
	return strings.NewReplacer("/", "_", "..", "_").Replace(id)
}

// maxLine bounds one output line; longer lines are dropped.
const maxLine = 8 << 20

// follow tails the spooled output until the CLI exits.
func (r *AgentRunner) follow(ctx context.Context, id, dir, format string, signalled []string) (workflows.AgentFinal, error) {
	parser, err := agentstream.New(format, time.Now)
	if err != nil {
		return workflows.AgentFinal{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeAgentUnknownConfig, nil)
	}
	var st agentstream.State
	sent := map[string]bool{}
	for _, code := range signalled {
		sent[code] = true
	}
	// Blockers signalled before this run of the activity (a resumed run)
	// were reported then.
	progress := progressReporter{observer: r.Observer, id: id, blockers: maps.Clone(sent)}
	var pending []workflows.AgentError
	var offset int64
	var partial []byte
	interval := r.PollInterval
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastBeat := time.Time{}

	feed := func(final bool) {
		chunk, n := readFrom(filepath.Join(dir, agentproc.StdoutFile), offset)
		offset += n
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
		if final && len(bytes.TrimSpace(partial)) > 0 {
			r.apply(parser, &st, partial, &pending)
			partial = partial[:0]
		}
	}

	for {
		code, exited := agentproc.ExitCode(dir)
		feed(exited)
		pending = r.signal(ctx, id, pending, sent)
		progress.report(st.Live.Activity, sent, code, exited)
		if time.Since(lastBeat) >= time.Second || exited {
			live := st.Live.Heartbeat()
			for code := range sent {
				live.Blockers = append(live.Blockers, code)
			}
			activity.RecordHeartbeat(ctx, live)
			lastBeat = time.Now()
		}
		if exited {
			if f, ok := parser.(agentstream.Finisher); ok {
				st.Apply(agentstream.Event{Final: f.Finish()}, time.Now())
			}
			out := st.Outcome(code)
			agentstream.Explain(&out, format, code, readTail(filepath.Join(dir, agentproc.StderrFile), agentstream.StderrTailWindow))
			return out, nil
		}
		select {
		case <-tick.C:
		case <-activity.GetWorkerStopChannel(ctx):
			// durawait is stopping, not the run: leave the CLI running and
			// let the next worker re-attach.
			return workflows.AgentFinal{}, errors.New("worker stopping; the CLI keeps running and is re-attached on restart")
		case <-ctx.Done():
			if stopping(ctx) {
				return workflows.AgentFinal{}, ctx.Err()
			}
			// Cancelled, or past agents.max_run_sec: stop the CLI either way,
			// so no run outlives its invocation.
			agentproc.Terminate(dir, r.CancelGrace)
			feed(true)
			if !errors.Is(ctx.Err(), context.Canceled) {
				return workflows.AgentFinal{}, ctx.Err()
			}
			out := st.Outcome(0)
			out.Status, out.Error = workflows.AgentCancelled, nil
			return workflows.AgentFinal{}, temporal.NewCanceledError(out)
		}
	}
}

// stopping reports whether the worker is shutting down, which cancels
// activities too but must leave the CLI running.
func stopping(ctx context.Context) bool {
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		return true
	default:
		return false
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

// signal sends the pending blockers the workflow has not had yet; failures
// stay pending for the next round.
func (r *AgentRunner) signal(ctx context.Context, id string, pending []workflows.AgentError, sent map[string]bool) []workflows.AgentError {
	var left []workflows.AgentError
	for _, b := range pending {
		if sent[b.Code] {
			continue
		}
		if err := r.Signals.SignalWorkflow(ctx, id, "", workflows.AgentBlockerSignal, b); err != nil {
			r.logger().Warn("could not signal a blocker; will retry", "invocation", id, "error", err)
			left = append(left, b)
			continue
		}
		sent[b.Code] = true
	}
	return left
}

// readFrom returns what path holds past offset.
func readFrom(path string, offset int64) ([]byte, int64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, 0
	}
	b, _ := io.ReadAll(f)
	return b, int64(len(b))
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
	for _, code := range news {
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
