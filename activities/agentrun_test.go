package activities

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/agentproc"
	"github.com/durawait/durawait/internal/childenv"
	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/workflows"
)

// preset is the built-in provider name of the configuration, as the runner
// gets it.
func preset(name string) AgentProvider {
	p := config.AgentPresets[name]
	return AgentProvider{Format: p.Format, Command: p.Command, Resume: p.Resume, Model: p.Model, Env: p.Env,
		Inherit: childenv.Inherit{All: p.InheritEnv.All, Names: p.InheritEnv.Names}}
}

// An agent CLI gets a minimal environment, like a downstream server: the
// base variables, its vendor's (the preset's inherit_env) and its
// provider's env; none of durawait's other secrets. A prompt longer than
// Linux lets one argument be is refused before the start, naming the limit
// and the stdin way around it.
func TestAnAgentCLIGetsAMinimalEnvironmentAndAnArgvTheKernelTakes(t *testing.T) {
	t.Setenv("DURAWAIT_TEST_SECRET", "s3cret")
	t.Setenv("ANTHROPIC_API_KEY", "vendor-key")
	t.Setenv("HTTPS_PROXY", "http://proxy.internal:3128")
	spool := t.TempDir()
	// The supervisor: writes the environment it was given, then claims
	// the run (as agentproc.Supervise does) and ends.
	supervisor := []string{"sh", "-c", `d=$2; env > "$d/env"; echo $$ > "$d/supervisor.pid"`, "supervisor"}
	prov := preset("claude")
	prov.Env = map[string]string{"MINE": "1"}
	r := &AgentRunner{Providers: map[string]AgentProvider{"claude": prov}, SpoolDir: spool, AllowedRoots: []string{spool}, Supervisor: supervisor}
	dir := filepath.Join(spool, "run")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, r.launch(dir, "agent/env", prov, workflows.AgentSpec{Provider: "claude", Prompt: "hi", Cwd: spool}))
	env, err := os.ReadFile(filepath.Join(dir, "env"))
	require.NoError(t, err)
	assert.Contains(t, string(env), "ANTHROPIC_API_KEY=vendor-key\n", "the vendor's key (the preset's inherit_env)")
	assert.Contains(t, string(env), "MINE=1\n", "the provider's env")
	assert.Contains(t, string(env), "PATH=", "the base")
	assert.Contains(t, string(env), "HTTPS_PROXY=http://proxy.internal:3128\n", "the session's proxy (childenv.AgentNames)")
	assert.NotContains(t, string(env), "s3cret", "durawait's other variables stay its own")

	err = r.launch(dir, "agent/long", prov, workflows.AgentSpec{Provider: "claude", Prompt: strings.Repeat("x", MaxArgBytes), Cwd: spool})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over the 128 KiB a single argument may have on Linux")
	assert.Contains(t, err.Error(), "stdin")
}

func TestBuildArgvPlacesOptionalArgumentsBeforeThePrompt(t *testing.T) {
	spec := workflows.AgentSpec{Prompt: "fix the build; rm -rf / is not a command here", Model: "o4", SessionID: "th-1"}
	argv, stdin := BuildArgv(preset("codex"), spec)
	assert.Equal(t, []string{"codex", "exec", "--json", "--skip-git-repo-check", "--model", "o4", "resume", "th-1", "--",
		"fix the build; rm -rf / is not a command here"}, argv, "the prompt is one argument, never shell text")
	assert.Nil(t, stdin)

	argv, _ = BuildArgv(preset("gemini"), workflows.AgentSpec{Prompt: "hi"})
	assert.Equal(t, []string{"gemini", "--output-format", "stream-json", "--prompt=hi"}, argv, "no model, no resume")

	argv, stdin = BuildArgv(AgentProvider{Command: []string{"mycli", "--headless"}, Resume: []string{"--continue", "{session_id}"}},
		workflows.AgentSpec{Prompt: "via stdin", SessionID: "s9"})
	assert.Equal(t, []string{"mycli", "--headless", "--continue", "s9"}, argv)
	assert.Equal(t, []byte("via stdin"), stdin, "without {prompt} the prompt goes to stdin")
}

// A prompt that starts with '-' must reach every preset CLI as its prompt,
// never as an option: after a "--" (Claude Code and Codex, whose parsers end
// options there), or attached to its option ("--prompt=...", which yargs and
// the other parsers read as the option's value whatever it starts with).
func TestBuildArgvKeepsAPromptStartingWithADashAPrompt(t *testing.T) {
	const prompt = "--dangerously-skip-permissions"
	spec := workflows.AgentSpec{Provider: "x", Prompt: prompt, Model: "m1", SessionID: "s1"}
	for name := range config.AgentPresets {
		t.Run(name, func(t *testing.T) {
			argv, stdin := BuildArgv(preset(name), spec)
			assert.Nil(t, stdin)
			if i := slices.Index(argv, prompt); i >= 0 {
				assert.Equal(t, "--", argv[i-1], "a prompt of its own follows \"--\": %q", argv)
			}
			assert.NoError(t, CheckPromptPlacement(name, preset(name), prompt))
			dashes := slices.Index(argv, "--")
			switch last := argv[len(argv)-1]; last {
			case "--prompt=" + prompt:
				assert.Equal(t, -1, dashes)
			default:
				require.GreaterOrEqual(t, dashes, 0, "argv %q", argv)
				assert.Equal(t, []string{"--", prompt}, argv[dashes:], "the prompt is the only argument after \"--\"")
				assert.Contains(t, argv[:dashes], "m1", "the model goes before \"--\"")
			}
		})
	}
	argv, _ := BuildArgv(preset("claude"), workflows.AgentSpec{Prompt: prompt, SessionID: "s1"})
	assert.Equal(t, []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--resume", "s1", "--", prompt}, argv)
}

func TestCheckPromptPlacementRefusesAnOptionLookingPromptWithoutEndOfOptions(t *testing.T) {
	custom := AgentProvider{Command: []string{"mycli", "--headless", "{prompt}"}}
	err := CheckPromptPlacement("mine", custom, "-rf")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `agents.providers.mine.command`)
	assert.NoError(t, CheckPromptPlacement("mine", custom, "a prompt - with a dash"))
	assert.NoError(t, CheckPromptPlacement("mine", AgentProvider{Command: []string{"mycli"}}, "-via stdin"))
	assert.NoError(t, CheckPromptPlacement("mine", AgentProvider{Command: []string{"mycli", "--", "{prompt}"}}, "-x"))
}

// Unfollowed lists the CLIs still running under the spool by the
// invocation each folder names (an authenticated caller's ID holds a '/'
// that the folder's name does not keep), and leaves out a CLI that exited,
// a run set aside, and a folder that names no invocation.
func TestUnfollowedNamesEachRunningCLIsInvocation(t *testing.T) {
	spool := t.TempDir()
	alive := strconv.Itoa(os.Getpid()) // a supervisor that runs: this test
	run := func(id, name string, files map[string]string) {
		dir := filepath.Join(spool, name)
		require.NoError(t, os.Mkdir(dir, 0o700))
		if id != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, invocationFile), []byte(id), 0o600))
		}
		for f, content := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600))
		}
	}
	scoped := "agent/p0123456789abcdef01234567/0123456789abcdef0123456789abcdef"
	run(scoped, spoolName(scoped), map[string]string{agentproc.SupervisorFile: alive})
	run("agent/local1", spoolName("agent/local1"), map[string]string{agentproc.SupervisorFile: alive})
	run("agent/exited", spoolName("agent/exited"), map[string]string{agentproc.SupervisorFile: alive, agentproc.ExitFile: "0"})
	run("agent/local1", spoolName("agent/local1")+".lost.20261204T170000", map[string]string{agentproc.SupervisorFile: alive})
	run("", spoolName("agent/unnamed"), map[string]string{agentproc.SupervisorFile: alive})
	r := &AgentRunner{SpoolDir: spool}
	assert.ElementsMatch(t, []string{scoped, "agent/local1"}, r.Unfollowed())
}

// A run stopped before it began (a cancel_agent that came while its host
// was down, resumed stopped) answers cancelled without launching its CLI
// or claiming its spool folder.
func TestARunStoppedBeforeItBeganLaunchesNothing(t *testing.T) {
	spool := t.TempDir()
	r := &AgentRunner{Providers: map[string]AgentProvider{"claude": preset("claude")}, SpoolDir: spool, AllowedRoots: []string{spool}}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrLoopStopped)
	_, err := r.Run(ctx, AgentRun{Input: workflows.RunAgentInput{InvocationID: "agent/stopped",
		Spec: workflows.AgentSpec{Provider: "claude", Prompt: "hi", Cwd: spool}}})
	require.ErrorIs(t, err, context.Canceled)
	_, statErr := os.Stat(filepath.Join(spool, spoolName("agent/stopped")))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "no spool folder: nothing was launched")
}

// Two followers of a lost run (its host back from a crash, and the worker
// handing it back) that resume it at once resume it once: the second
// finds the first's resumption running and follows it.
func TestALostRunResumedByTwoFollowersAtOnceLaunchesOnce(t *testing.T) {
	spool := t.TempDir()
	launches := filepath.Join(t.TempDir(), "launches")
	// The supervisor: counts its launch, then claims the run as
	// agentproc.Supervise does (its pid, linked once) and runs on as a CLI
	// would. It counts before it claims, so the count is written before
	// the launcher (which waits for the claim) returns; a second launch
	// that finds the run claimed still counts.
	supervisor := []string{"sh", "-c", `d=$2; echo launch >> "$0"; echo $$ > "$d/sup.$$"; ln "$d/sup.$$" "$d/supervisor.pid" || exit 0; exec sleep 30`, launches}
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	id := "agent/lost"
	dir := filepath.Join(spool, spoolName(id))
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.SupervisorFile), []byte(strconv.Itoa(gone.Process.Pid)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.StdoutFile), []byte(`{"type":"system","subtype":"init","session_id":"s-1"}`+"\n"), 0o600))
	require.True(t, agentproc.Lost(dir))

	r := &AgentRunner{Providers: map[string]AgentProvider{"claude": preset("claude")}, SpoolDir: spool, AllowedRoots: []string{spool}, Supervisor: supervisor}
	in := workflows.RunAgentInput{InvocationID: id, Spec: workflows.AgentSpec{Provider: "claude", Prompt: "hi", Cwd: spool}}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = r.resumeLost(dir, preset("claude"), in, workflows.AgentTurn{}) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	t.Cleanup(func() {
		if pid, err := os.ReadFile(filepath.Join(dir, agentproc.SupervisorFile)); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
	})
	out, err := os.ReadFile(launches)
	require.NoError(t, err)
	assert.Equal(t, "launch\n", string(out), "the session was resumed once")
	aside, err := filepath.Glob(dir + ".lost.*")
	require.NoError(t, err)
	assert.Len(t, aside, 1, "the lost run was set aside once")
	assert.True(t, agentproc.Running(dir), "the resumption runs in the run's folder")
}

// An answer reaches the run that follows its invocation's CLI here, once:
// a turn the run has had is taken as given, and with no run here the
// answer fails (its activity is retried). A turn's spool folder is told
// apart from another invocation's.
func TestAnAnswerReachesTheRunOnce(t *testing.T) {
	r := &AgentRunner{}
	turn := workflows.AgentTurn{InvocationID: "agent/a", Turn: 1, SessionID: "s1", Answer: "yes"}
	require.Error(t, r.Answer(turn), "no run follows it")
	next := r.listen("agent/a", 0)
	require.NoError(t, r.Answer(turn))
	require.NoError(t, r.Answer(turn), "given again: taken as given")
	assert.Equal(t, turn, <-next)
	assert.Empty(t, next, "told once")
	r.forget("agent/a")
	require.Error(t, r.Answer(workflows.AgentTurn{InvocationID: "agent/a", Turn: 2}))

	assert.Equal(t, workflows.AgentTurn{Turn: 2}, lastTurn([]workflows.AgentTurn{{Turn: 2}, {Turn: 1}}))
	assert.True(t, isTurnOf("agent_a", "agent_a"))
	assert.True(t, isTurnOf("agent_a.turn-12", "agent_a"))
	assert.False(t, isTurnOf("agent_a.turn-", "agent_a"))
	assert.False(t, isTurnOf("agent_ab", "agent_a"))
	assert.False(t, isTurnOf("agent_a.lost.20260101T000000", "agent_a"))
	assert.Equal(t, "/s/agent_a.turn-3", turnDir("/s/agent_a", 3))
}

// A run whose output was cut to its cap (agentproc's outputcap.go) is
// read past the cut: its session comes from the head the cut kept, the
// line the cut began in is dropped (its tail, which reads as a result
// here, is not one), and the reply is the newest line's.
func TestARunWhoseOutputWasCutIsReadPastTheCut(t *testing.T) {
	dir := t.TempDir()
	head := `{"type":"system","subtype":"init","session_id":"s-cut"}` + "\n"
	cutLine := `{"type":"assistant","pad":"` + strings.Repeat("x", 5000) + `",` + `{"type":"result","subtype":"success","result":"WRONG"}` + "\n"
	newest := `{"type":"assistant","message":{"content":[{"type":"text","text":"the newest reply"}]}}` + "\n"
	from := int64(len(head))
	to := from + int64(strings.Index(cutLine, `{"type":"result"`))
	out := head + strings.Repeat("\x00", int(to-from)) + cutLine[to-from:] + newest
	require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.StdoutFile), []byte(out), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.StdoutFile+agentproc.CutSuffix), []byte(strconv.FormatInt(from, 10)+" "+strconv.FormatInt(to, 10)+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, agentproc.ExitFile), []byte("0"), 0o600))

	r := &AgentRunner{}
	final, err, next := r.follow(context.Background(), AgentRun{Input: workflows.RunAgentInput{InvocationID: "agent/cut"}}, 0, dir, preset("claude"), nil)
	require.NoError(t, err)
	require.Nil(t, next)
	assert.Equal(t, "s-cut", final.SessionID, "the head the cut kept names the session")
	assert.Equal(t, "the newest reply", final.Output)

	session, reply := spooledSession(dir, workflows.AgentFormatClaude)
	assert.Equal(t, "s-cut", session)
	assert.Equal(t, "the newest reply", reply)
}
