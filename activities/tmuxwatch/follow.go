package tmuxwatch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/durawait/durawait/workflows"
)

// Event is one thing a control client reports about the followed pane.
type Event struct {
	// Output is the pane's raw output, octal escapes decoded.
	Output []byte
	// Notice is any other notification line (%window-close, %exit, ...).
	Notice string
}

// Follower is a read-only, ignore-size control-mode client attached to a
// pane's session. It never types into or resizes anything, and shows in
// `tmux list-clients` while it runs.
type Follower struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan Event
	stop   chan struct{} // closed by Close: the reader stops delivering
	done   chan struct{}
}

// attachTimeout bounds how long attaching a control client may take.
const attachTimeout = 10 * time.Second

// Follow attaches a control client to the session of paneID and returns once
// it is attached, so output printed from then on is seen.
func (s Server) Follow(ctx context.Context, paneID string) (*Follower, error) {
	cmd := exec.Command("tmux", s.args("-C", "attach-session", "-t", paneID, "-f", "read-only,ignore-size")...)
	// The control client dies with durawait: no client is left behind
	// (on Linux even after a kill -9; controlClientProcAttr says how on
	// other systems).
	cmd.SysProcAttr = controlClientProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, &Error{Code: workflows.TextErrTmuxUnavailable, Message: "tmux is not installed (no tmux on PATH)"}
		}
		return nil, fmt.Errorf("start tmux control client: %w", err)
	}
	f := &Follower{cmd: cmd, stdin: stdin, events: make(chan Event, 256), stop: make(chan struct{}), done: make(chan struct{})}
	attached := make(chan struct{})
	go f.read(stdout, paneID, attached)

	timer := time.NewTimer(attachTimeout)
	defer timer.Stop()
	select {
	case <-attached:
		return f, nil
	case <-f.done:
		f.Close()
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "no server running") || strings.Contains(msg, "error connecting") {
			return nil, &Error{Code: workflows.TextErrTmuxUnavailable, Message: "no tmux server is running" + s.where(), Retryable: true}
		}
		return nil, fmt.Errorf("tmux control client for %s ended at once: %s", paneID, msg)
	case <-timer.C:
		f.Close()
		return nil, fmt.Errorf("tmux control client for %s did not attach within %s", paneID, attachTimeout)
	case <-ctx.Done():
		f.Close()
		return nil, ctx.Err()
	}
}

// Events delivers the pane's output and the client's notifications; it is
// closed when the client ends.
func (f *Follower) Events() <-chan Event { return f.events }

// Close detaches the client at once.
func (f *Follower) Close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	_ = f.stdin.Close()
	_ = f.cmd.Process.Kill()
	<-f.done
}

func (f *Follower) read(stdout io.Reader, paneID string, attached chan struct{}) {
	defer func() {
		_ = f.cmd.Wait()
		close(f.events)
		close(f.done)
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	isAttached := false
	markAttached := func() {
		if !isAttached {
			isAttached = true
			close(attached)
		}
	}
	prefix := "%output " + paneID + " "
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, prefix):
			f.deliver(Event{Output: DecodeOctal(line[len(prefix):])})
		case strings.HasPrefix(line, "%output "), strings.HasPrefix(line, "%extended-output "):
			// Another pane of the session.
		case strings.HasPrefix(line, "%end "), strings.HasPrefix(line, "%session-changed "):
			markAttached()
		case strings.HasPrefix(line, "%begin "), strings.HasPrefix(line, "%error "):
		case strings.HasPrefix(line, "%"):
			if isAttached {
				f.deliver(Event{Notice: line})
			}
		}
	}
}

// deliver passes ev on unless the follower is closing.
func (f *Follower) deliver(ev Event) {
	select {
	case f.events <- ev:
	case <-f.stop:
	}
}

// DecodeOctal undoes control mode's escaping: tmux writes bytes below 32
// and the backslash as \ooo.
func DecodeOctal(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return out
}

func isOctal(b byte) bool { return b >= '0' && b <= '7' }
