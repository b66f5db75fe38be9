package tmuxwatch

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testServer starts a tmux server on a private socket with one session
// ("one") of one pane; it is killed when the test ends.
func testServer(t *testing.T, env ...string) Server {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	// A short directory: a socket path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "tw")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	srv := Server{Socket: filepath.Join(dir, "s")}
	start := exec.Command("tmux", srv.args("new-session", "-d", "-s", "one", "-x", "120", "-y", "30", "sh")...)
	start.Env = append(os.Environ(), env...)
	out, err := start.CombinedOutput()
	require.NoError(t, err, "start tmux: %s", out)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", srv.Socket, "kill-server").Run() })
	return srv
}

func tmuxRun(t *testing.T, srv Server, args ...string) string {
	t.Helper()
	out, err := exec.Command("tmux", srv.args(args...)...).CombinedOutput()
	require.NoError(t, err, "tmux %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func controlClients(srv Server) int {
	out, err := exec.Command("tmux", srv.args("list-clients", "-F", "#{client_control_mode}")...).Output()
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "1")
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitOutput reads f's events until their output contains text.
func awaitOutput(t *testing.T, f *Follower, text string) string {
	t.Helper()
	var seen strings.Builder
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	for !strings.Contains(seen.String(), text) {
		select {
		case ev, open := <-f.Events():
			require.True(t, open, "the control client ended before %q appeared", text)
			seen.Write(ev.Output)
		case <-timer.C:
			t.Fatalf("%q did not appear; seen: %q", text, seen.String())
		}
	}
	return seen.String()
}

func TestHubSharesOneControlClientPerSession(t *testing.T) {
	srv := testServer(t)
	ctx := context.Background()
	paneA := tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{pane_id}")
	paneB := tmuxRun(t, srv, "split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "one", "sh")
	tmuxRun(t, srv, "new-session", "-d", "-s", "two", "sh")
	paneC := tmuxRun(t, srv, "display-message", "-p", "-t", "two", "#{pane_id}")
	hub := NewHub()
	defer hub.Close()

	// paneB first: attaching by pane (as before) made it the active one.
	b, err := hub.Follow(ctx, srv, paneB)
	require.NoError(t, err)
	a1, err := hub.Follow(ctx, srv, paneA)
	require.NoError(t, err)
	a2, err := hub.Follow(ctx, srv, paneA)
	require.NoError(t, err)
	assert.Equal(t, 1, controlClients(srv), "three watches of one session share one client")
	c, err := hub.Follow(ctx, srv, paneC)
	require.NoError(t, err)
	assert.Equal(t, 2, controlClients(srv), "another session has its own client")
	assert.Equal(t, paneA, tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{pane_id}"),
		"attaching left the session's active pane as it was")

	tmuxRun(t, srv, "send-keys", "-t", paneA, "-l", "printf 'A%s\\n' -MARK")
	tmuxRun(t, srv, "send-keys", "-t", paneA, "Enter")
	awaitOutput(t, a1, "A-MARK")
	awaitOutput(t, a2, "A-MARK")
	tmuxRun(t, srv, "send-keys", "-t", paneB, "-l", "printf 'B%s\\n' -MARK")
	tmuxRun(t, srv, "send-keys", "-t", paneB, "Enter")
	assert.NotContains(t, awaitOutput(t, b, "B-MARK"), "A-MARK", "a watch sees only its own pane's output")

	a1.Close()
	a1.Close() // twice is harmless
	b.Close()
	assert.Equal(t, 2, controlClients(srv), "a session's client stays while one of its watches does")
	tmuxRun(t, srv, "send-keys", "-t", paneA, "-l", "printf 'A%s\\n' -AGAIN")
	tmuxRun(t, srv, "send-keys", "-t", paneA, "Enter")
	awaitOutput(t, a2, "A-AGAIN")
	a2.Close()
	eventually(t, "the last watch of session one to detach its client", func() bool { return controlClients(srv) == 1 })

	// A new watch of the session attaches a new client.
	a3, err := hub.Follow(ctx, srv, paneA)
	require.NoError(t, err)
	assert.Equal(t, 2, controlClients(srv))
	a3.Close()
	c.Close()
	eventually(t, "every client to detach", func() bool { return controlClients(srv) == 0 })
}

func TestHubEndsEveryWatchWhenTheServerGoes(t *testing.T) {
	srv := testServer(t)
	hub := NewHub()
	defer hub.Close()
	pane := tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{pane_id}")
	var fs []*Follower
	for i := 0; i < 3; i++ {
		f, err := hub.Follow(context.Background(), srv, pane)
		require.NoError(t, err)
		fs = append(fs, f)
	}
	tmuxRun(t, srv, "kill-server")
	for _, f := range fs {
		for range f.Events() {
		}
		f.Close()
	}
	// A watch asked for while the server is still exiting or once it is
	// gone is told tmux is unavailable (a retryable code), never an
	// unclassified error.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := hub.Follow(context.Background(), srv, pane)
		var te *Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "tmux_unavailable", string(te.Code))
		if exec.Command("tmux", srv.args("list-sessions")...).Run() != nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the tmux server did not exit")
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServerGoneKnowsTmuxsMessages(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		gone bool
	}{
		{"no server running on /tmp/tw1/s", true},
		{"error connecting to /tmp/tw1/s (No such file or directory)", true},
		{"server exited unexpectedly", true}, // the server was exiting as the client connected
		{"can't find pane: %9", false},
		{"", false},
	} {
		assert.Equal(t, tc.gone, serverGone(tc.msg), tc.msg)
	}
}

func TestHubCloseDetachesEveryClient(t *testing.T) {
	srv := testServer(t)
	hub := NewHub()
	pane := tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{pane_id}")
	f, err := hub.Follow(context.Background(), srv, pane)
	require.NoError(t, err)
	hub.Close()
	assert.Equal(t, 0, controlClients(srv), "Close returns once the clients have left")
	for range f.Events() {
	}
	f.Close()
	_, err = hub.Follow(context.Background(), srv, pane)
	assert.ErrorIs(t, err, errHubClosed)
}

// helperEnv names the socket a re-executed test binary follows a pane on,
// as durawait's worker does, until it is killed.
const helperEnv = "TMUXWATCH_TEST_FOLLOW_SOCKET"

// bigEnvironment is 300 variables of 200 bytes, as a CI runner or an agent
// host may have: a client sends tmux its whole environment when it
// attaches, and a big one makes the crash below come within a few kills.
var bigEnvironment = func() []string {
	env := make([]string, 300)
	for i := range env {
		env[i] = fmt.Sprintf("TMUXWATCH_TEST_FILLER_%d=%s", i, strings.Repeat("x", 200))
	}
	return env
}()

// maxTmuxDeaths is how many of TestHubKeepsTheTmuxServerAliveThroughCrashes'
// 100 kills may take the tmux server with them. tmux itself (3.3a, 3.5a)
// segfaults now and then when even one control client dies at the wrong
// moment (CI saw it once at kill 93 of 100; docs/tmux.md): a bug of tmux's
// that durawait cannot prevent. What durawait controls, one control client
// for all the watches of a session, the test checks at every kill of a
// process whose watches all attached.
const maxTmuxDeaths = 3

// TestHubKeepsTheTmuxServerAliveThroughCrashes kills a process holding 40
// watches of one pane with SIGKILL, over and over, some while it attaches.
// With a control client per watch, tmux 3.3a's server segfaulted within a
// few such kills (docs/tmux.md); with one shared client it lives, but for
// tmux's own rare crash (maxTmuxDeaths), after which a new server takes
// its place.
func TestHubKeepsTheTmuxServerAliveThroughCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a process 100 times")
	}
	ticking := func() (Server, string) {
		srv := testServer(t, bigEnvironment...)
		pane := tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{pane_id}")
		tmuxRun(t, srv, "send-keys", "-t", pane, "-l", "while :; do echo tick; sleep 0.05; done")
		tmuxRun(t, srv, "send-keys", "-t", pane, "Enter")
		return srv, pane
	}
	srv, pane := ticking()
	deaths := 0
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for round := 1; round <= 100; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFollowUntilKilled$")
		cmd.Env = append(os.Environ(), helperEnv+"="+srv.Socket, "TMUXWATCH_TEST_PANE="+pane)
		cmd.Env = append(cmd.Env, bigEnvironment...)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(out)
		// Half the kills land while the watches attach (up to 150 ms after they
		// begin), half once all follow.
		want := "following"
		if round%2 == 0 {
			want = "attached"
		}
		for lines.Scan() && lines.Text() != want {
			require.NotContains(t, lines.Text(), "error:", "a watch failed to follow at kill %d", round)
		}
		if want == "attached" {
			require.Equal(t, 1, controlClients(srv), "40 watches of one session share one control client (kill %d)", round)
		}
		time.Sleep(time.Duration(rng.Intn(150)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		eventually(t, "the killed process's control client to go", func() bool { return controlClients(srv) == 0 })
		if _, err = exec.Command("tmux", srv.args("has-session", "-t", "one")...).Output(); err != nil {
			deaths++
			require.LessOrEqual(t, deaths, maxTmuxDeaths, "the tmux server died at kill %d, %d deaths so far", round, deaths)
			t.Logf("the tmux server died at kill %d (tmux's own crash, %d of at most %d); starting another", round, deaths, maxTmuxDeaths)
			srv, pane = ticking()
		}
	}
}

// TestHelperFollowUntilKilled is the process TestHubKeepsTheTmuxServerAliveThroughCrashes kills.
func TestHelperFollowUntilKilled(t *testing.T) {
	socket := os.Getenv(helperEnv)
	if socket == "" {
		t.Skip("run by TestHubKeepsTheTmuxServerAliveThroughCrashes")
	}
	srv, pane := Server{Socket: socket}, os.Getenv("TMUXWATCH_TEST_PANE")
	hub := NewHub()
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := hub.Follow(context.Background(), srv, pane); err != nil {
				fmt.Println("error:", err)
			}
		}()
	}
	fmt.Println("following")
	wg.Wait()
	fmt.Println("attached")
	select {}
}

// A follower that does not keep up is dropped (its Events close, so its
// watch starts again with a new baseline); the reader does not wait for it,
// and the session's other followers go on.
func TestHubDropsAFollowerThatFallsBehind(t *testing.T) {
	srv := testServer(t)
	hub := NewHub()
	hub.buffer = 16
	defer hub.Close()
	pane := tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{pane_id}")
	slow, err := hub.Follow(context.Background(), srv, pane)
	require.NoError(t, err)
	defer slow.Close()
	fast, err := hub.Follow(context.Background(), srv, pane)
	require.NoError(t, err)
	defer fast.Close()

	for i := 0; i < 40; i++ {
		tmuxRun(t, srv, "send-keys", "-t", pane, "-l", fmt.Sprintf("echo line-%d", i))
		tmuxRun(t, srv, "send-keys", "-t", pane, "Enter")
		awaitOutput(t, fast, fmt.Sprintf("line-%d\r\n", i))
	}
	n := 0
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	for dropped := false; !dropped; {
		select {
		case _, open := <-slow.Events():
			if open {
				n++
			}
			dropped = !open
		case <-timer.C:
			t.Fatal("the slow follower was not dropped")
		}
	}
	assert.LessOrEqual(t, n, 16, "the slow follower's buffered events, then its Events closed")
	assert.Equal(t, 1, controlClients(srv), "the client stays for the follower that keeps up")
}

// Locate names every session that holds a pane: a window linked into two
// sessions is in both, and after it is unlinked from one, in the other.
func TestLocateNamesTheSessionsThatHoldAPane(t *testing.T) {
	srv := testServer(t)
	tmuxRun(t, srv, "new-session", "-d", "-s", "two", "sh")
	pane := tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{pane_id}")
	one := tmuxRun(t, srv, "display-message", "-p", "-t", "one", "#{session_id}")
	two := tmuxRun(t, srv, "display-message", "-p", "-t", "two", "#{session_id}")
	gen := func() string {
		panes, err := srv.ListPanes(context.Background())
		require.NoError(t, err)
		for _, p := range panes {
			if p.PaneID == pane {
				return p.Generation
			}
		}
		t.Fatalf("pane %s not listed", pane)
		return ""
	}()
	locate := func() []string {
		_, sessions, err := srv.Locate(context.Background(), pane, gen)
		require.NoError(t, err)
		return sessions
	}
	assert.Equal(t, []string{one}, locate())

	tmuxRun(t, srv, "link-window", "-s", "one:0", "-t", "two:9")
	assert.ElementsMatch(t, []string{one, two}, locate())

	tmuxRun(t, srv, "new-window", "-d", "-t", "one:1", "sh") // session one keeps a window after the unlink
	tmuxRun(t, srv, "unlink-window", "-t", "one:0")
	assert.Equal(t, []string{two}, locate())

	_, _, err := srv.Locate(context.Background(), pane, "g1:another-life")
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "stale_generation", string(te.Code))
}

// A hub's watches share one bound on the commands in flight to each tmux
// server: with the bound taken, a command waits (here until its context
// ends, without starting tmux), and a place freed lets the next run.
func TestAHubBoundsTheCommandsInFlightToAServer(t *testing.T) {
	srv := testServer(t)
	h := NewHub()
	gated := h.Server(srv.Socket)
	require.Equal(t, gated.gate, h.Server(srv.Socket).gate, "one bound per server")
	require.NotEqual(t, gated.gate, h.Server(srv.Socket+"-other").gate, "another server, another bound")

	for range commandsPerServer {
		gated.gate <- struct{}{} // every place taken, as by commands in flight
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := gated.ListPanes(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a command waits for a place")

	<-gated.gate
	panes, err := gated.ListPanes(context.Background())
	require.NoError(t, err)
	assert.Len(t, panes, 1)
	assert.Len(t, gated.gate, commandsPerServer-1, "the command gave its place back")
}

// What docs/security.md promises of a watch, seen from the tmux server's
// side: the control client is read-only and ignore-size, and nothing it
// does reaches the pane as input. The pane's program records every byte of
// input it gets (raw mode, so even a key without Enter counts); after a
// watch attached, followed and detached, it has recorded none.
func TestAWatchAttachesReadOnlyAndSendsNoKeys(t *testing.T) {
	srv := testServer(t)
	keys := filepath.Join(t.TempDir(), "keys")
	tmuxRun(t, srv, "new-session", "-d", "-s", "k", "sh", "-c", "stty raw -echo && printf 'recording\\n' && exec cat > "+keys)
	pane := tmuxRun(t, srv, "display-message", "-p", "-t", "k", "#{pane_id}")
	eventually(t, "the pane's program to record its input", func() bool {
		_, err := os.Stat(keys)
		return err == nil
	})
	hub := NewHub()
	defer hub.Close()

	f, err := hub.Follow(context.Background(), srv, pane)
	require.NoError(t, err)
	flags := tmuxRun(t, srv, "list-clients", "-F", "#{client_control_mode} #{client_flags}")
	require.Contains(t, flags, "1 ", "a control client is attached")
	assert.Contains(t, flags, "read-only", "the server holds the watch's client read-only: %s", flags)
	assert.Contains(t, flags, "ignore-size", "and it does not resize the session: %s", flags)
	f.Close()
	eventually(t, "the watch's client to detach", func() bool { return controlClients(srv) == 0 })

	// The pane still reads input (a key sent now is recorded), so an empty
	// record means the watch sent none.
	tmuxRun(t, srv, "send-keys", "-t", pane, "-l", "z")
	eventually(t, "the pane's program to record the test's own key", func() bool {
		b, _ := os.ReadFile(keys)
		return len(b) > 0
	})
	b, err := os.ReadFile(keys)
	require.NoError(t, err)
	assert.Equal(t, "z", string(b), "the only input the pane got is the test's own key")
}
