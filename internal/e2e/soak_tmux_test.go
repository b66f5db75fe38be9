package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/durawait/durawait/activities/tmuxwatch"
	"github.com/durawait/durawait/workflows"
)

// The soak's tmux server is an outside part, like the downstream probe
// server, and it can die: under the kill storm (durawait's control clients
// killed with it, a thousand times) tmux 3.3a and 3.5a have segfaulted
// (docs/tmux.md). The soak watches the server, starts another as a
// supervisor would, and types the flips of new waits into the new pane;
// a wait whose pane died with the server answers a pane error
// (stale_generation, pane_died, tmux_unavailable), which the judge excuses
// only when the record shows the server of that wait's pane died before the
// answer. knobs.tmuxCrashes kills the server on purpose, so every soak
// exercises this path.

// soakTmuxLife is one life of the soak's tmux server and its pane.
type soakTmuxLife struct {
	pane  paneInfo
	pid   int
	began time.Time
	// lastAlive is the last check that found the server running; died is
	// when the soak found it gone (zero while it runs). It died between.
	lastAlive, died time.Time
	// crashed says the soak killed it on purpose (knobs.tmuxCrashes).
	crashed bool
}

// soakTmuxCheck is how often the soak checks that its tmux server runs;
// soakTmuxCommand bounds each tmux command of the soak's own.
const (
	soakTmuxCheck   = 200 * time.Millisecond
	soakTmuxCommand = 10 * time.Second
)

// tmuxCommand is a tmux command on the soak's socket, bounded by
// soakTmuxCommand; cancel releases it.
func (s *soak) tmuxCommand(args ...string) (cmd *exec.Cmd, cancel context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), soakTmuxCommand)
	return exec.CommandContext(ctx, "tmux", append([]string{"-S", s.w.socket}, args...)...), cancel
}

// firstTmuxLife records the server the workspace started, with the pane
// list_panes listed.
func (s *soak) firstTmuxLife(pane paneInfo) error {
	pid, err := s.tmuxServerPID()
	if err != nil {
		return err
	}
	now := time.Now()
	s.tmuxMu.Lock()
	s.lives = []*soakTmuxLife{{pane: pane, pid: pid, began: now, lastAlive: now}}
	s.tmuxMu.Unlock()
	return nil
}

// tmuxServerPID is the pid of the tmux server on the soak's socket.
func (s *soak) tmuxServerPID() (int, error) {
	cmd, cancel := s.tmuxCommand("display-message", "-p", "#{pid}")
	defer cancel()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("tmux display-message: %w: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("tmux server pid %q: %w", out, err)
	}
	return pid, nil
}

// watchTmux checks the tmux server every soakTmuxCheck until stop and
// starts another when it is gone. A server that cannot be started again
// fails the soak's machinery; the watch tries again every second.
func (s *soak) watchTmux(stop <-chan struct{}) {
	tick := time.NewTicker(soakTmuxCheck)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		life := s.currentLife()
		if life.died.IsZero() {
			// The time is taken before the check: the server ran then.
			now := time.Now()
			if processRuns(life.pid) {
				s.tmuxMu.Lock()
				life.lastAlive = now
				s.tmuxMu.Unlock()
				continue
			}
			s.tmuxMu.Lock()
			life.died = time.Now()
			s.tmuxMu.Unlock()
			s.t.Logf("soak: the tmux server (pid %d) died between %s and %s; starting another", life.pid, clock(life.lastAlive), clock(life.died))
		}
		next, err := s.startTmuxLife()
		if err != nil {
			s.t.Errorf("soak: could not start the tmux server again: %v", err)
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			continue
		}
		s.tmuxMu.Lock()
		s.lives = append(s.lives, next)
		s.tmuxMu.Unlock()
	}
}

// processRuns says whether pid is a process that has not exited.
func processRuns(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(string(stat[i+1:]), " Z")
}

// startTmuxLife starts the tmux server again with the session the
// workspace made, and reads its pane as list_panes lists it (durawait may
// be down at that moment, so through the tmuxwatch package list_panes
// uses).
func (s *soak) startTmuxLife() (*soakTmuxLife, error) {
	cmd, cancel := s.tmuxCommand("new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "sh")
	out, err := cmd.CombinedOutput()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("tmux new-session: %w: %s", err, out)
	}
	pid, err := s.tmuxServerPID()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), soakTmuxCommand)
	defer cancel()
	panes, err := tmuxwatch.Server{Socket: s.w.socket}.ListPanes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the new server's panes: %w", err)
	}
	if len(panes) != 1 {
		return nil, fmt.Errorf("the new server has %d panes, want 1", len(panes))
	}
	now := time.Now()
	p := panes[0]
	return &soakTmuxLife{pid: pid, began: now, lastAlive: now,
		pane: paneInfo{PaneID: p.PaneID, Generation: p.Generation, Session: p.Session, Command: p.CurrentCommand, Width: p.Width, Active: p.Active, Dead: p.Dead}}, nil
}

// lifePID is the pid of the server of pane, or 0.
func (s *soak) lifePID(pane paneInfo) int {
	s.tmuxMu.Lock()
	defer s.tmuxMu.Unlock()
	for _, l := range s.lives {
		if l.pane.Generation == pane.Generation {
			return l.pid
		}
	}
	return 0
}

// currentLife is the tmux server's life the soak last started.
func (s *soak) currentLife() *soakTmuxLife {
	s.tmuxMu.Lock()
	defer s.tmuxMu.Unlock()
	return s.lives[len(s.lives)-1]
}

// currentPane is the pane a new text wait targets: the running server's,
// once the soak has started one again after a death (a soak whose tmux
// server cannot be started again has failed already, and its waits are
// lost).
func (s *soak) currentPane() paneInfo {
	for {
		s.tmuxMu.Lock()
		life := s.lives[len(s.lives)-1]
		pane, running := life.pane, life.died.IsZero()
		s.tmuxMu.Unlock()
		if running {
			return pane
		}
		time.Sleep(soakTmuxCheck / 4)
	}
}

// crashTmux kills the running tmux server, as a crash of it would; a
// server that died on its own meanwhile is left to the watch.
func (s *soak) crashTmux() {
	life := s.currentLife()
	s.tmuxMu.Lock()
	if !life.died.IsZero() {
		s.tmuxMu.Unlock()
		return
	}
	life.crashed = true
	s.tmuxMu.Unlock()
	if err := syscall.Kill(life.pid, syscall.SIGKILL); err != nil {
		s.t.Logf("soak: could not kill the tmux server (pid %d): %v", life.pid, err)
	}
}

// paneGone says whether the server of pane died and, if so, when: the
// span from its last check alive to the check that found it gone.
func (s *soak) paneGone(pane paneInfo) (lastAlive, died time.Time, gone bool) {
	s.tmuxMu.Lock()
	defer s.tmuxMu.Unlock()
	for _, l := range s.lives {
		if l.pane.Generation == pane.Generation {
			return l.lastAlive, l.died, !l.died.IsZero()
		}
	}
	return time.Time{}, time.Time{}, false
}

// soakPaneLossCodes are the wait_for_text errors of a pane whose tmux
// server died: it is gone (pane_died), or its ID names a pane of the next
// server (stale_generation) or none (pane_not_found). A client takes one
// of them as its answer; tmux_unavailable (no server runs, or none was
// reached) it calls again after, but the judge excuses it too (paneLost).
var soakPaneLossCodes = []workflows.TextErrorCode{
	workflows.TextErrPaneDied, workflows.TextErrStaleGeneration, workflows.TextErrPaneNotFound,
}

// finalPaneLoss says whether a client whose pane died takes an answer
// with code as its last: only a code about the pane itself.
func finalPaneLoss(code workflows.TextErrorCode) bool {
	return slices.Contains(soakPaneLossCodes, code)
}

// textErrorCode is the code of a wait_for_text error answer, or "".
func textErrorCode(answer string) workflows.TextErrorCode {
	var out textOutcome
	if json.Unmarshal([]byte(answer), &out) != nil || out.Error == nil {
		return ""
	}
	return workflows.TextErrorCode(out.Error.Code)
}

// paneLost is the judge's excuse for a wait_for_text error with code at
// at: the server of the wait's pane died, and had been seen running for
// the last time before at. "" when the record does not show it.
func (s *soak) paneLost(sw *soakWait, code workflows.TextErrorCode, at time.Time) string {
	if code == "" {
		return ""
	}
	known := finalPaneLoss(code) || code == workflows.TextErrTmuxUnavailable
	sw.mu.Lock()
	target := sw.target
	sw.mu.Unlock()
	lastAlive, died, gone := s.paneGone(target)
	if !known || !gone || !lastAlive.Before(at) {
		return ""
	}
	return fmt.Sprintf("its pane %s's tmux server died between %s and %s (last seen running before the answer at %s)",
		target.PaneID, clock(lastAlive), clock(died), clock(at))
}

// reportTmux writes the tmux server's lives into the report.
func (s *soak) reportTmux(b *strings.Builder, lost int) {
	s.tmuxMu.Lock()
	defer s.tmuxMu.Unlock()
	deaths, crashed := 0, 0
	for _, l := range s.lives {
		if !l.died.IsZero() {
			deaths++
			if l.crashed {
				crashed++
			}
		}
	}
	fmt.Fprintf(b, "  tmux server deaths %d (%d killed by the soak, %d on its own), servers started again %d; text waits answered a pane error excused by a death %d\n",
		deaths, crashed, deaths-crashed, len(s.lives)-1, lost)
	for _, l := range s.lives {
		if !l.died.IsZero() {
			fmt.Fprintf(b, "    pid %d died between %s and %s (killed by the soak: %t)\n", l.pid, clock(l.lastAlive), clock(l.died), l.crashed)
		}
	}
}
