package callevents

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTruncateCutsCharactersAndSaysHowMany(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
		cut      int
	}{
		{"fits", "hello", 5, "hello", 0},
		{"shorter", "hi", 16384, "hi", 0},
		{"ascii", "hello world", 5, "hello…[truncated: 6 more characters]", 6},
		// Characters, not bytes: "é" and "日" are one character each.
		{"multibyte", "éé日日日", 3, "éé日…[truncated: 2 more characters]", 2},
		{"zero", "abc", 0, "…[truncated: 3 more characters]", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := Truncate(tc.in, tc.max)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.cut, cut)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

func known(names ...string) func(string) bool {
	return func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
}

func TestParseToolsTakesRepeatsAndCommaLists(t *testing.T) {
	tools, err := ParseTools([]string{"wait_for, wait_agent", "demo.read_file"}, known("wait_for", "wait_agent", "demo.read_file"))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"wait_for": true, "wait_agent": true, "demo.read_file": true}, tools)

	tools, err = ParseTools(nil, known())
	require.NoError(t, err)
	assert.Nil(t, tools, "no parameter: every tool")

	_, err = ParseTools([]string{"wait_for,nope"}, known("wait_for"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `query parameter tool: unknown tool "nope"`)

	_, err = ParseTools([]string{"wait_for,"}, known("wait_for"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "query parameter tool: an empty tool name")
}

func TestFilterKeepsOnesOwnCallsAndTools(t *testing.T) {
	alice := Filter{Principal: "alice"}
	assert.True(t, alice.Match(Event{Owner: "alice", Tool: "wait_for"}))
	assert.False(t, alice.Match(Event{Owner: "bob", Tool: "wait_for"}))
	assert.False(t, alice.Match(Event{Owner: "", Tool: "wait_for"}), "the local user's calls are not alice's")

	local := Filter{AllPrincipals: true}
	assert.True(t, local.Match(Event{Owner: "bob"}))

	onlyWaitFor := Filter{AllPrincipals: true, Tools: map[string]bool{"wait_for": true}}
	assert.True(t, onlyWaitFor.Match(Event{Tool: "wait_for"}))
	assert.False(t, onlyWaitFor.Match(Event{Tool: "wait_agent"}))
}

func TestHubDeliversInOrderPerPrincipal(t *testing.T) {
	h := NewHub(0)
	alice, endA := h.Subscribe(Filter{Principal: "alice"})
	defer endA()
	bob, endB := h.Subscribe(Filter{Principal: "bob"})
	defer endB()

	h.Publish(Event{Type: TypeStarted, Owner: "alice", CallID: "a1"})
	h.Publish(Event{Type: TypeStarted, Owner: "bob", CallID: "b1"})
	h.Publish(Event{Type: TypeEnded, Owner: "alice", CallID: "a1"})

	first, second := <-alice.Events(), <-alice.Events()
	assert.Equal(t, []string{TypeStarted, TypeEnded}, []string{first.Type, second.Type})
	assert.Less(t, first.Seq, second.Seq)
	assert.False(t, first.Time.IsZero(), "stamped")
	got := <-bob.Events()
	assert.Equal(t, "b1", got.CallID)
	select {
	case ev := <-bob.Events():
		t.Fatalf("bob got alice's event %+v", ev)
	default:
	}
}

// A subscriber that does not read never blocks Publish; what it missed is
// counted.
func TestHubNeverBlocksOnASlowSubscriber(t *testing.T) {
	h := NewHub(2)
	slow, end := h.Subscribe(Filter{AllPrincipals: true})
	defer end()
	done := make(chan struct{})
	go func() {
		for i := 0; i < 10; i++ {
			h.Publish(Event{Type: TypeProgress})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a full subscriber")
	}
	assert.Equal(t, int64(8), slow.TakeDropped())
	assert.Equal(t, int64(0), slow.TakeDropped(), "taking resets the count")
	assert.Len(t, slow.Events(), 2)

	end()
	h.Publish(Event{Type: TypeProgress})
	assert.Equal(t, 0, h.Subscribers())
}

func TestWriteFrameIsOneSSEEvent(t *testing.T) {
	var b strings.Builder
	ev := Event{Seq: 7, Type: TypeEnded, Tool: "wait_for", CallID: "call-1", WaitID: "wait_for/abc", Result: "line one\nline two"}
	require.NoError(t, WriteFrame(&b, ev))
	frame := b.String()
	require.True(t, strings.HasSuffix(frame, "\n\n"), "a blank line ends the frame")
	lines := strings.Split(strings.TrimSuffix(frame, "\n\n"), "\n")
	require.Len(t, lines, 3, "id, event, one data line (newlines in the JSON are escaped): %q", frame)
	assert.Equal(t, "id: 7", lines[0])
	assert.Equal(t, "event: durawait.tool_call.ended", lines[1])
	var back Event
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(lines[2], "data: ")), &back))
	assert.Equal(t, ev.Result, back.Result)
	assert.Equal(t, ev.WaitID, back.WaitID)

	b.Reset()
	require.NoError(t, WriteFrame(&b, Event{Type: TypeDropped, Dropped: 3}))
	assert.False(t, strings.HasPrefix(b.String(), "id:"), "an event without a sequence number has no id")
}

// Stream over real HTTP: the subscribed comment first, then the frames, and
// a dropped event before the first event after a drop.
func TestStreamSendsFramesAndCountsDrops(t *testing.T) {
	h := NewHub(1)
	subscribed := make(chan *Subscription, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub, end := h.Subscribe(Filter{AllPrincipals: true})
		defer end()
		subscribed <- sub
		_ = Stream(r.Context(), w, sub, time.Hour)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, ": subscribed\n", line)
	sub := <-subscribed

	// The buffer holds one; the stream may take the first before the
	// second is published, so publish until something was dropped.
	for i := 0; sub.dropped.Load() == 0; i++ {
		require.Less(t, i, 100000, "nothing was ever dropped")
		h.Publish(Event{Type: TypeProgress, CallID: "c"})
	}
	var types []string
	var dropped int64
	for !contains(types, TypeDropped) || types[len(types)-1] == TypeDropped {
		frame := readFrame(t, r)
		types = append(types, frame["event"])
		if frame["event"] == TypeDropped {
			var ev Event
			require.NoError(t, json.Unmarshal([]byte(frame["data"]), &ev))
			dropped += ev.Dropped
		}
	}
	assert.Contains(t, types, TypeDropped)
	assert.Positive(t, dropped, "the notice counts the drops")
	i := slices.Index(types, TypeDropped)
	assert.Equal(t, TypeProgress, types[i+1], "the notice comes right before an event")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// readFrame reads one SSE frame's fields, skipping comments.
func readFrame(t *testing.T, r *bufio.Reader) map[string]string {
	t.Helper()
	fields := map[string]string{}
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && len(fields) > 0:
			return fields
		case line == "" || strings.HasPrefix(line, ":"):
			continue
		}
		k, v, _ := strings.Cut(line, ": ")
		fields[k] = v
	}
}

// Join caps the subscribers, per key and in all; a freed place can be
// taken again.
func TestJoinCapsTheSubscribers(t *testing.T) {
	h := NewHub(0)
	h.SetLimits(3, 2)
	_, endA1, err := h.Join(Filter{}, "alice")
	require.NoError(t, err)
	_, _, err = h.Join(Filter{}, "alice")
	require.NoError(t, err)
	_, _, err = h.Join(Filter{}, "alice")
	require.ErrorIs(t, err, ErrTooManySubscribers)
	assert.Contains(t, err.Error(), "this caller has 2")
	_, _, err = h.Join(Filter{}, "bob")
	require.NoError(t, err)
	_, _, err = h.Join(Filter{}, "carol")
	require.ErrorIs(t, err, ErrTooManySubscribers)
	assert.Contains(t, err.Error(), "this process has 3")
	endA1()
	endA1() // twice is once
	assert.Equal(t, 2, h.Subscribers())
	_, _, err = h.Join(Filter{}, "alice")
	require.NoError(t, err)
}

// A subscriber that stops reading ends its stream within the write
// timeout: the write blocked on its full TCP window gives up, and the
// stream returns an error (so the handler unsubscribes).
func TestStreamEndsWhenTheSubscriberStopsReading(t *testing.T) {
	h := NewHub(4096)
	sub, end := h.Subscribe(Filter{AllPrincipals: true})
	defer end()
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done <- StreamWith(r.Context(), w, sub, StreamOptions{WriteTimeout: 200 * time.Millisecond})
	}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": subscribed\n", line)
	// Never read again; publish far more than the socket buffers hold.
	big := strings.Repeat("x", 1<<20)
	deadline := time.Now().Add(30 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "the stream still blocks on a subscriber that reads nothing")
		h.Publish(Event{Type: TypeEnded, Tool: "wait_for", Result: big})
		select {
		case err := <-done:
			require.Error(t, err, "a write timed out")
			return
		case <-time.After(10 * time.Millisecond): // the next event
		}
	}
}

// Drops that no event follows are reported at the next heartbeat.
func TestDropsAreReportedOnTheHeartbeat(t *testing.T) {
	h := NewHub(1)
	sub, end := h.Subscribe(Filter{AllPrincipals: true})
	defer end()
	sub.dropped.Add(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = StreamWith(r.Context(), w, sub, StreamOptions{Heartbeat: 20 * time.Millisecond})
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	frame := readFrame(t, bufio.NewReader(resp.Body))
	assert.Equal(t, TypeDropped, frame["event"])
	var ev Event
	require.NoError(t, json.Unmarshal([]byte(frame["data"]), &ev))
	assert.Equal(t, int64(3), ev.Dropped)
	assert.NotContains(t, frame, "id", "a notice has no id")
}

// Invalid UTF-8 bytes count as one character each and are never split.
func TestTruncateInvalidUTF8(t *testing.T) {
	got, cut := Truncate("a\xffb\xfe日c", 3)
	assert.Equal(t, 3, cut)
	assert.Equal(t, "a\xffb…[truncated: 3 more characters]", got)
}
