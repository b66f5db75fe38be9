package callevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ToolParam is the query parameter that filters the stream by tool.
const ToolParam = "tool"

// ParseTools reads the tool filter of a subscription: every value of the
// tool query parameter, each a tool name or a comma-separated list of them.
// known says whether a tool name exists; an unknown one is an error that
// names the parameter. No value: nil (every tool).
func ParseTools(values []string, known func(string) bool) (map[string]bool, error) {
	var tools map[string]bool
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				return nil, fmt.Errorf("query parameter %s: an empty tool name (give ?%s=wait_for or ?%s=wait_for,wait_agent)", ToolParam, ToolParam, ToolParam)
			}
			if !known(name) {
				return nil, fmt.Errorf("query parameter %s: unknown tool %q", ToolParam, name)
			}
			if tools == nil {
				tools = map[string]bool{}
			}
			tools[name] = true
		}
	}
	return tools, nil
}

// WriteFrame writes ev as one Server-Sent Events frame: its sequence number
// as the id (none for an event without one, such as TypeDropped), its type as the event name, and its JSON as one data line
// (JSON encoding escapes newlines, so the data never spans lines).
func WriteFrame(w io.Writer, ev Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	if ev.Seq > 0 {
		if _, err := fmt.Fprintf(w, "id: %d\n", ev.Seq); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data)
	return err
}

// DefaultHeartbeat is how often an idle stream sends a comment, so proxies
// and clients see it is alive.
const DefaultHeartbeat = 15 * time.Second

// DefaultWriteTimeout bounds each write of a stream: a subscriber that
// stops reading (its TCP window full) ends its stream after this long,
// instead of holding a goroutine, a connection and a subscription until
// TCP gives up, and a shutdown's drain is not held up by it.
const DefaultWriteTimeout = 10 * time.Second

// StreamOptions tune Stream; zero values are the defaults.
type StreamOptions struct {
	// Heartbeat is how often an idle stream sends a comment
	// (DefaultHeartbeat).
	Heartbeat time.Duration
	// WriteTimeout bounds each write and flush (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Recheck, when set, runs at every heartbeat: an error ends the
	// stream, after a comment with its text (a subscriber's credentials
	// that expired or were revoked, say).
	Recheck func() error
}

// Stream writes sub's events to w as Server-Sent Events until ctx ends or a
// write fails, with the default heartbeat (or heartbeat when positive) and
// write timeout; see StreamWith.
func Stream(ctx context.Context, w http.ResponseWriter, sub *Subscription, heartbeat time.Duration) error {
	return StreamWith(ctx, w, sub, StreamOptions{Heartbeat: heartbeat})
}

// StreamWith writes sub's events to w as Server-Sent Events until ctx ends
// or a write fails. It sends the response headers and a first comment at
// once (a client may read it as "subscribed"), a comment every heartbeat
// while idle (after opts.Recheck), and a TypeDropped event that counts what this subscriber
// missed, before its next event or at the next heartbeat, whichever comes
// first. The notice's place is approximate (an event dropped after the
// next one was queued is counted before it): the gap in the events' Seq
// says exactly where events are missing. Each write and flush must end
// within the write timeout (when w supports write deadlines, as a
// net/http server's does), or the stream ends with an error.
func StreamWith(ctx context.Context, w http.ResponseWriter, sub *Subscription, opts StreamOptions) error {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	rc := http.NewResponseController(w)
	// deadline bounds the next write and flush; a writer without
	// deadlines (a test's recorder) has none.
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(opts.WriteTimeout)) }
	flush := func() error {
		if err := rc.Flush(); err != nil {
			if errors.Is(err, http.ErrNotSupported) {
				return fmt.Errorf("the response writer cannot flush: no event stream possible")
			}
			return fmt.Errorf("flush the event stream: %w", err)
		}
		return nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	deadline()
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, ": subscribed\n\n"); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	tick := time.NewTicker(opts.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			deadline()
			if opts.Recheck != nil {
				if err := opts.Recheck(); err != nil {
					_, _ = io.WriteString(w, ": "+strings.ReplaceAll(err.Error(), "\n", " ")+"\n\n")
					_ = flush()
					return err
				}
			}
			// Drops with no event after them are reported here, so a
			// subscriber learns of them even when nothing more comes.
			if n := sub.TakeDropped(); n > 0 {
				if err := WriteFrame(w, Event{Type: TypeDropped, Time: time.Now().UTC(), Dropped: n}); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		case ev := <-sub.Events():
			deadline()
			if n := sub.TakeDropped(); n > 0 {
				if err := WriteFrame(w, Event{Type: TypeDropped, Time: ev.Time, Dropped: n}); err != nil {
					return err
				}
			}
			if err := WriteFrame(w, ev); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		}
	}
}
