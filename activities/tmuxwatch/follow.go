package tmuxwatch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
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

// attachTimeout bounds how long attaching a control client may take.
const attachTimeout = 10 * time.Second

// detachTimeout bounds how long a control client may take to leave after
// its stdin is closed before it is killed.
const detachTimeout = 2 * time.Second

// controlClient is one read-only, ignore-size control-mode client attached
// to a session. It never types into or resizes anything, and shows in
// `tmux list-clients` while it runs. A Hub shares it among the watches of
// the session's panes.
type controlClient struct {
	key   sessionKey
	cmd   *exec.Cmd
	stdin io.WriteCloser

	ready     chan struct{} // closed once attached or failed
	attachErr error         // set before ready is closed
	done      chan struct{} // closed when the process has ended

	mu      sync.Mutex
	ended   bool                              // the client ended or was released: no new followers
	panes   map[string]map[*Follower]struct{} // followers by pane ID
	nSubs   int
	pending int                  // Follow calls waiting for ready (guarded by the hub's mu)
	onDone  func(*controlClient) // tells the hub the client ended
}

// startControlClient starts the client process of key's session; it
// reports attachment (or its failure) by closing ready.
func (s Server) startControlClient(key sessionKey, onDone func(*controlClient)) (*controlClient, error) {
	// Attaching by session ID, not by pane, leaves the session's current
	// window and active pane as they are.
	cmd := exec.Command("tmux", s.args("-C", "attach-session", "-t", key.session, "-f", "read-only,ignore-size")...)
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
	c := &controlClient{
		key: key, cmd: cmd, stdin: stdin,
		ready: make(chan struct{}), done: make(chan struct{}),
		panes: make(map[string]map[*Follower]struct{}), onDone: onDone,
	}
	attached := make(chan struct{})
	go c.read(stdout, attached)
	go func() {
		timer := time.NewTimer(attachTimeout)
		defer timer.Stop()
		select {
		case <-attached:
		case <-c.done:
			msg := strings.TrimSpace(stderr.String())
			if serverGone(msg) {
				c.attachErr = &Error{Code: workflows.TextErrTmuxUnavailable, Message: "no tmux server is running" + s.where(), Retryable: true}
			} else {
				c.attachErr = fmt.Errorf("tmux control client for session %s ended at once: %s", key.session, orErr(msg, errors.New("no message")))
			}
		case <-timer.C:
			c.attachErr = fmt.Errorf("tmux control client for session %s did not attach within %s", key.session, attachTimeout)
			c.kill()
		}
		close(c.ready)
	}()
	return c, nil
}

// followerBuffer is how many events a follower may fall behind before it
// is dropped (its watch starts again): the shared reader never waits for
// one follower.
const followerBuffer = 1024

// subscribe adds a follower of paneID, unless the client has ended.
func (c *controlClient) subscribe(h *Hub, paneID string) *Follower {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return nil
	}
	f := &Follower{client: c, hub: h, paneID: paneID, events: make(chan Event, h.buffer), stop: make(chan struct{})}
	if c.panes[paneID] == nil {
		c.panes[paneID] = make(map[*Follower]struct{})
	}
	c.panes[paneID][f] = struct{}{}
	c.nSubs++
	return f
}

// unsubscribe removes f and reports whether it was there.
func (c *controlClient) unsubscribe(f *Follower) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.panes[f.paneID][f]; !ok {
		return false
	}
	delete(c.panes[f.paneID], f)
	if len(c.panes[f.paneID]) == 0 {
		delete(c.panes, f.paneID)
	}
	c.nSubs--
	return true
}

// release marks a client without followers as taking no new ones and
// reports whether it did (false: it has followers, or has ended).
func (c *controlClient) release() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nSubs > 0 || c.ended {
		return false
	}
	c.ended = true
	return true
}

// followers returns the followers of paneID, or of every pane when paneID
// is empty.
func (c *controlClient) followers(paneID string) []*Follower {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Follower
	for id, fs := range c.panes {
		if paneID != "" && id != paneID {
			continue
		}
		for f := range fs {
			out = append(out, f)
		}
	}
	return out
}

// detach closes the client's stdin, which tmux takes as a clean detach,
// and kills it only if it has not left within detachTimeout.
func (c *controlClient) detach() {
	_ = c.stdin.Close()
	timer := time.NewTimer(detachTimeout)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		c.kill()
		<-c.done
	}
}

func (c *controlClient) kill() { _ = c.cmd.Process.Kill() }

func (c *controlClient) read(stdout io.Reader, attached chan struct{}) {
	defer func() {
		_ = c.cmd.Wait()
		c.onDone(c)
		c.mu.Lock()
		c.ended = true
		var left []*Follower
		for _, fs := range c.panes {
			for f := range fs {
				left = append(left, f)
			}
		}
		c.mu.Unlock()
		for _, f := range left {
			close(f.events)
		}
		close(c.done)
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	isAttached := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "%output "):
			paneID, data, ok := strings.Cut(line[len("%output "):], " ")
			if !ok {
				continue
			}
			fs := c.followers(paneID)
			if len(fs) == 0 {
				continue // a pane of the session nobody follows
			}
			out := DecodeOctal(data)
			for _, f := range fs {
				f.deliver(Event{Output: out})
			}
		case strings.HasPrefix(line, "%extended-output "):
		case strings.HasPrefix(line, "%end "), strings.HasPrefix(line, "%session-changed "):
			if !isAttached {
				isAttached = true
				close(attached)
			}
		case strings.HasPrefix(line, "%begin "), strings.HasPrefix(line, "%error "):
		case strings.HasPrefix(line, "%"):
			if isAttached {
				for _, f := range c.followers("") {
					f.deliver(Event{Notice: line})
				}
			}
		}
	}
}

// Follower follows one pane's output through its session's shared control
// client.
type Follower struct {
	client    *controlClient
	hub       *Hub
	paneID    string
	events    chan Event
	stop      chan struct{} // closed by Close: the reader stops delivering
	closeOnce sync.Once
}

// Session is the ID of the session whose control client f follows the
// pane through; it sees the pane only while that session holds it.
func (f *Follower) Session() string { return f.client.key.session }

// Events delivers the pane's output and the session's notifications; it is
// closed when the control client ends (the tmux server went away, or the
// client was killed) or the follower fell too far behind (followerBuffer
// events).
func (f *Follower) Events() <-chan Event { return f.events }

// Close stops following. The last follower of a session detaches its
// control client, in the background.
func (f *Follower) Close() {
	f.closeOnce.Do(func() {
		close(f.stop)
		f.hub.release(f)
	})
}

// deliver passes ev on without waiting. A follower whose buffer is full
// has fallen behind: it is dropped, and its closed Events tell its watch
// to start again (with a new baseline, so nothing printed is missed).
// Only the client's reader calls it.
func (f *Follower) deliver(ev Event) {
	select {
	case f.events <- ev:
	case <-f.stop:
	default:
		if f.hub.release(f) {
			close(f.events)
		}
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
