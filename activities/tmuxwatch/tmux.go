// Package tmuxwatch talks to a tmux server: it lists panes, captures a
// pane's screen and scrollback, and follows a pane's output through a
// read-only control-mode client, so a wait for text is event-driven.
package tmuxwatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/durawait/durawait/workflows"
)

// Error is a tmux failure with its wait_for_text error code.
type Error struct {
	Code      workflows.TextErrorCode
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Server is one tmux server, by socket path (empty: the user's default).
type Server struct {
	Socket string
	// gate, when set (Hub.Server), bounds the commands in flight to the
	// server: a command waits for a place in it.
	gate chan struct{}
}

func (s Server) args(args ...string) []string {
	if s.Socket != "" {
		return append([]string{"-S", s.Socket}, args...)
	}
	return args
}

// run runs one tmux command and returns its standard output.
func (s Server) run(ctx context.Context, args ...string) (string, error) {
	if s.gate != nil {
		select {
		case s.gate <- struct{}{}:
			defer func() { <-s.gate }()
		case <-ctx.Done():
			return "", fmt.Errorf("tmux %s: %w", args[0], ctx.Err())
		}
	}
	cmd := exec.CommandContext(ctx, "tmux", s.args(args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", &Error{Code: workflows.TextErrTmuxUnavailable, Message: "tmux is not installed (no tmux on PATH)", Retryable: false}
		}
		msg := strings.TrimSpace(stderr.String())
		if serverGone(msg) {
			return "", &Error{Code: workflows.TextErrTmuxUnavailable, Message: "no tmux server is running" + s.where() + ": " + msg, Retryable: true}
		}
		return "", fmt.Errorf("tmux %s: %s", args[0], orErr(msg, err))
	}
	return stdout.String(), nil
}

// serverGone reports whether a tmux client's error message says there is
// no server to talk to: none was running, the socket refused, or the server
// exited while the client was connecting (it was being killed).
func serverGone(msg string) bool {
	return strings.Contains(msg, "no server running") ||
		strings.Contains(msg, "error connecting") ||
		strings.Contains(msg, "server exited unexpectedly")
}

func (s Server) where() string {
	if s.Socket == "" {
		return " (default socket)"
	}
	return " on socket " + s.Socket
}

func orErr(msg string, err error) string {
	if msg != "" {
		return msg
	}
	return err.Error()
}

// Pane is one tmux pane, as list_panes reports it (the wire type lives
// with the tool's other types in workflows).
type Pane = workflows.Pane

// paneFormat asks list-panes for the fields of Pane, of its generation and
// its session's ID, separated by a unit separator that titles do not
// contain (printed as such, or escaped: fieldSeparator).
const paneFormat = "#{pane_id}\x1f#{pid}\x1f#{start_time}\x1f#{pane_pid}\x1f#{session_name}\x1f#{window_index}\x1f#{window_name}\x1f" +
	"#{pane_index}\x1f#{pane_title}\x1f#{pane_current_command}\x1f#{pane_width}\x1f#{pane_height}\x1f#{pane_active}\x1f#{pane_dead}\x1f#{session_id}"

// paneRow is one row of list-panes -a: a pane as one session holds it (a
// window linked into several sessions has a row in each).
type paneRow struct {
	Pane
	sessionID string
}

// Generation identifies one life of a pane: the tmux server (its pid and
// start time) and the pane's process. Respawning the pane or restarting the
// server changes it.
func Generation(serverPID, serverStart, paneID, panePID string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{serverPID, serverStart, paneID, panePID}, "/")))
	return "g1:" + hex.EncodeToString(sum[:12])
}

// ListPanes lists every pane of the server.
func (s Server) ListPanes(ctx context.Context) ([]Pane, error) {
	rows, err := s.paneRows(ctx)
	if err != nil {
		return nil, err
	}
	panes := make([]Pane, len(rows))
	for i, r := range rows {
		panes[i] = r.Pane
	}
	return panes, nil
}

func (s Server) paneRows(ctx context.Context) ([]paneRow, error) {
	out, err := s.run(ctx, "list-panes", "-a", "-F", paneFormat)
	if err != nil {
		return nil, err
	}
	var rows []paneRow
	sep := fieldSeparator(out)
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Split(line, sep)
		if len(f) != 15 {
			continue
		}
		atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
		rows = append(rows, paneRow{Pane: Pane{
			PaneID: f[0], Generation: Generation(f[1], f[2], f[0], f[3]),
			Session: f[4], WindowIndex: atoi(f[5]), WindowName: f[6], PaneIndex: atoi(f[7]),
			Title: f[8], CurrentCommand: f[9], Width: atoi(f[10]), Height: atoi(f[11]),
			Active: f[12] == "1", Dead: f[13] == "1",
		}, sessionID: f[14]})
	}
	return rows, nil
}

// fieldSeparator is the separator of paneFormat's fields as tmux printed
// them: the unit separator itself (tmux 3.3 and earlier), or its octal
// escape, as tmux 3.4 and later print every control character of a
// format's output.
func fieldSeparator(out string) string {
	if strings.Contains(out, "\x1f") {
		return "\x1f"
	}
	return `\037`
}

// Lookup finds paneID and checks its generation.
func (s Server) Lookup(ctx context.Context, paneID, generation string) (Pane, error) {
	p, _, err := s.Locate(ctx, paneID, generation)
	return p, err
}

// Locate finds paneID, checks its generation, and returns the IDs of the
// sessions that hold it (more than one when its window is linked into
// several).
func (s Server) Locate(ctx context.Context, paneID, generation string) (Pane, []string, error) {
	rows, err := s.paneRows(ctx)
	if err != nil {
		return Pane{}, nil, err
	}
	var found *Pane
	var sessions []string
	for i := range rows {
		if rows[i].PaneID == paneID {
			if found == nil {
				found = &rows[i].Pane
			}
			sessions = append(sessions, rows[i].sessionID)
		}
	}
	switch {
	case found == nil:
		return Pane{}, nil, &Error{Code: workflows.TextErrPaneNotFound, Message: fmt.Sprintf("no pane %s on the tmux server%s; call list_panes", paneID, s.where())}
	case found.Generation != generation:
		return *found, sessions, &Error{Code: workflows.TextErrStaleGeneration, Message: fmt.Sprintf(
			"pane %s is a different life of the pane than generation %q (it was respawned or the tmux server restarted); call list_panes for its current generation",
			paneID, generation)}
	case found.Dead:
		return *found, sessions, &Error{Code: workflows.TextErrPaneDied, Message: fmt.Sprintf("pane %s is dead (its process exited)", paneID)}
	}
	return *found, sessions, nil
}

// Capture returns the pane's screen and scrollback as text, wrapped lines
// joined, without escape sequences.
func (s Server) Capture(ctx context.Context, paneID string) (string, error) {
	return s.run(ctx, "capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", paneID)
}
