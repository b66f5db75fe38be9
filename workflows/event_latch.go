package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"
)

// Names of the event latch workflow and its messages: part of the durable
// contract with running histories.
const (
	EventLatchWorkflowName = "EventLatch"
	// EventPostUpdate posts to an event (EventPostRequest, answered with
	// an EventPostAnswer). An update, so that the poster learns the post is
	// kept (and whether it was a repeat) in one round trip.
	EventPostUpdate = "post"
	// EventSubscribeSignal asks the latch to tell a wait of the event's
	// posts (EventSubscription).
	EventSubscribeSignal = "subscribe"
	// EventPostedSignal is how the latch tells a subscribed wait of a post
	// (EventPost).
	EventPostedSignal = "event-posted"
	// EventRefusedSignal is how the latch refuses a wait it cannot hold
	// (the reason, a string): the wait ends with that error.
	EventRefusedSignal = "event-refused"
)

// latchRunLimit is how many history events a latch's run grows to before
// it continues as new with its state.
const latchRunLimit = 2000

// EventLatchInput is the input of the EventLatch workflow: the event, and
// the state a run carries to the next (continue-as-new).
type EventLatchInput struct {
	Name string `json:"name"`
	// Caller is the DurawaitCaller value of the event's owner (or
	// SharedEventTag), which its start shows.
	Caller string `json:"caller,omitempty"`
	// Retention is how long a post is kept; a post brings the poster's
	// retention, which then holds.
	Retention time.Duration `json:"retention"`

	LastSeq     int64               `json:"last_seq,omitempty"`
	Posts       []EventPost         `json:"posts,omitempty"`
	Deliveries  []EventDelivery     `json:"deliveries,omitempty"`
	Subscribers []EventSubscription `json:"subscribers,omitempty"`
}

// EventDelivery is a delivery ID the latch has seen, and the post it made.
type EventDelivery struct {
	ID  string    `json:"id"`
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
}

// EventSubscription is a wait on an event's posts.
type EventSubscription struct {
	// WaitID is the workflow ID of the wait, which the latch signals
	// (EventPostedSignal).
	WaitID string `json:"wait_id"`
	// Match and AfterSeq filter the posts (see WaitForEventSpec).
	Match    string `json:"match,omitempty"`
	AfterSeq int64  `json:"after_seq,omitempty"`
	// Started is when the wait began (a post's answer tells it back, from
	// which a front computes the wait's elapsed time).
	Started time.Time `json:"started"`
	// Until is when the wait's bound ends: the latch drops it then.
	Until time.Time `json:"until"`
	// Wake marks a wait_for's wake-up: told every post from its
	// subscription on (none kept before it), until Until. Any other
	// subscription is told one post (a kept one at once, if one passes
	// its filter) and dropped.
	Wake bool `json:"wake,omitempty"`
}

// EventPostRequest is a post to an event's latch.
type EventPostRequest struct {
	Payload    json.RawMessage `json:"payload"`
	Source     string          `json:"source"`
	DeliveryID string          `json:"delivery_id,omitempty"`
	// Retention is the poster's [events] retention.
	Retention time.Duration `json:"retention"`
}

// EventPostAnswer is what a post did.
type EventPostAnswer struct {
	// Post is the post kept: this one, or for a repeated delivery ID the
	// one it made first.
	Post EventPost `json:"post"`
	// Duplicate says the delivery ID was seen before: nothing was posted.
	Duplicate bool `json:"duplicate,omitempty"`
	// Answered are the waits the post ended, which a front tells in
	// process at once.
	Answered []AnsweredWait `json:"answered,omitempty"`
	// Woken counts the wait_for wake-ups the post woke.
	Woken int `json:"woken,omitempty"`
}

// AnsweredWait is a wait a post ended.
type AnsweredWait struct {
	WaitID  string    `json:"wait_id"`
	Started time.Time `json:"started"`
}

// latch is an event's state in its workflow.
type latch struct {
	in EventLatchInput
	// outbox are the tells not sent yet: the post handler decides who is
	// told, and the workflow's loop sends them in bounded batches.
	outbox []tellItem
	// changed wakes the loop when a post was kept.
	changed workflow.Channel
	// patterns are the waits' compiled patterns, by source (not carried
	// across continue-as-new: compiled again on demand).
	patterns map[string]*regexp.Regexp
}

// tellItem is a signal to a wait: a post, or a refusal.
type tellItem struct {
	waitID string
	post   *EventPost
	refuse string
}

// Bounds of one batch of tells, each batch one workflow task's commands:
// far below Temporal's 2,000 pending signals of a workflow and its 4 MB
// message limit.
const (
	tellBatchSignals = 200
	tellBatchBytes   = 1 << 20
)

// EventLatch is the workflow that keeps an event's posts for its
// retention and tells them to the waits on it. A post is an update
// (EventPostUpdate), answered once the post is kept; a wait subscribes by
// signal (EventSubscribeSignal) and is told by signal (EventPostedSignal),
// in batches the loop sends and awaits. The latch ends when it keeps no
// post, holds no wait and has told every wait it owes; it continues as new
// when its history grows long, its tells sent first.
//
// It shows DurawaitState running while it holds posts or waits, and
// expired when it ends (cancelled when an operator cancelled it).
func EventLatch(ctx workflow.Context, in EventLatchInput) error {
	markRunning(ctx)
	l := &latch{in: in, changed: workflow.NewBufferedChannel(ctx, 1), patterns: map[string]*regexp.Regexp{}}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, EventPostUpdate, l.post, workflow.UpdateHandlerOptions{
		Validator: validatePost,
	}); err != nil {
		return err
	}
	subscribe := workflow.GetSignalChannel(ctx, EventSubscribeSignal)
	var (
		timer       workflow.Future
		timerAt     time.Time
		cancelTimer workflow.CancelFunc
	)
	for {
		if err := ctx.Err(); err != nil {
			// An operator cancelled the event (its posts with it).
			setState(ctx, StateCancelled)
			return err
		}
		for {
			var sub EventSubscription
			if !subscribe.ReceiveAsync(&sub) {
				break
			}
			l.subscribe(sub)
		}
		if len(l.outbox) > 0 {
			l.sendBatch(ctx)
			continue
		}
		l.expire(workflow.Now(ctx))
		if workflow.AllHandlersFinished(ctx) && subscribe.Len() == 0 {
			if len(l.in.Posts) == 0 && len(l.in.Subscribers) == 0 {
				setState(ctx, StateExpired)
				return nil
			}
			info := workflow.GetInfo(ctx)
			if info.GetCurrentHistoryLength() > latchRunLimit || info.GetContinueAsNewSuggested() {
				return workflow.NewContinueAsNewError(ctx, EventLatchWorkflowName, l.in)
			}
		}
		if at, ok := l.nextExpiry(); ok && (timer == nil || at.Before(timerAt)) {
			if cancelTimer != nil {
				cancelTimer()
			}
			var tctx workflow.Context
			tctx, cancelTimer = workflow.WithCancel(ctx)
			timer, timerAt = workflow.NewTimer(tctx, max(at.Sub(workflow.Now(ctx)), time.Millisecond)), at
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
		sel.AddReceive(subscribe, func(workflow.ReceiveChannel, bool) {})
		sel.AddReceive(l.changed, func(c workflow.ReceiveChannel, _ bool) { c.ReceiveAsync(nil) })
		if timer != nil {
			sel.AddFuture(timer, func(workflow.Future) { timer, cancelTimer = nil, nil })
		}
		sel.Select(ctx)
	}
}

// sendBatch sends the next batch of the outbox and waits until Temporal
// took each signal. A wait that has ended meanwhile is not told (its
// signal fails, and the failure is dropped).
func (l *latch) sendBatch(ctx workflow.Context) {
	var (
		futures []workflow.Future
		bytes   int
		n       int
	)
	for n < len(l.outbox) && n < tellBatchSignals && bytes < tellBatchBytes {
		t := l.outbox[n]
		if t.post != nil {
			bytes += len(t.post.Payload)
			futures = append(futures, workflow.SignalExternalWorkflow(ctx, t.waitID, "", EventPostedSignal, *t.post))
		} else {
			futures = append(futures, workflow.SignalExternalWorkflow(ctx, t.waitID, "", EventRefusedSignal, t.refuse))
		}
		n++
	}
	l.outbox = slices.Delete(l.outbox, 0, n)
	for _, f := range futures {
		_ = f.Get(ctx, nil)
	}
}

// validatePost refuses a post the latch could not keep.
func validatePost(_ workflow.Context, req EventPostRequest) error {
	if len(req.Payload) == 0 || !json.Valid(req.Payload) {
		return errors.New("payload: is not valid JSON")
	}
	if len(req.Payload) > MaxEventPayloadBytes {
		return fmt.Errorf("payload: must be at most %d bytes (got %d)", MaxEventPayloadBytes, len(req.Payload))
	}
	if req.DeliveryID != "" {
		if rule := CheckDeliveryID(req.DeliveryID); rule != "" {
			return errors.New("delivery_id: " + rule)
		}
	}
	return nil
}

// post keeps a post (a repeated delivery ID keeps nothing) and tells the
// waits it passes.
func (l *latch) post(ctx workflow.Context, req EventPostRequest) (EventPostAnswer, error) {
	now := workflow.Now(ctx)
	if req.Retention > 0 {
		l.in.Retention = req.Retention
	}
	l.expire(now)
	if req.DeliveryID != "" {
		for _, d := range l.in.Deliveries {
			if d.ID == req.DeliveryID {
				return EventPostAnswer{Post: l.postOf(d), Duplicate: true}, nil
			}
		}
	}
	l.in.LastSeq = nextSeq(l.in.LastSeq, now)
	p := EventPost{Seq: l.in.LastSeq, Payload: req.Payload, PostedAt: now, Source: req.Source, DeliveryID: req.DeliveryID}
	l.in.Posts = append(l.in.Posts, p)
	l.trimPosts()
	if req.DeliveryID != "" {
		l.in.Deliveries = append(l.in.Deliveries, EventDelivery{ID: req.DeliveryID, Seq: p.Seq, At: now})
		if n := len(l.in.Deliveries) - MaxRememberedDeliveries; n > 0 {
			l.in.Deliveries = slices.Delete(l.in.Deliveries, 0, n)
		}
	}
	answer := EventPostAnswer{Post: p}
	kept := l.in.Subscribers[:0]
	for _, s := range l.in.Subscribers {
		if !l.matches(p, s.Match, s.AfterSeq) {
			kept = append(kept, s)
			continue
		}
		l.tell(s.WaitID, p)
		if s.Wake {
			answer.Woken++
			kept = append(kept, s)
		} else {
			answer.Answered = append(answer.Answered, AnsweredWait{WaitID: s.WaitID, Started: s.Started})
		}
	}
	l.in.Subscribers = kept
	l.changed.SendAsync(struct{}{})
	return answer, nil
}

// nextSeq numbers the post after last, kept at now: one more than last,
// or now in microseconds since the epoch when that is more. Numbers so
// grow across the latch's runs too: a latch that ended (its posts outlived
// the retention) and a new run of it started by a later post number on
// from the time, above every number the earlier run gave, so a wait's
// after_seq never skips a post of a later run.
func nextSeq(last int64, now time.Time) int64 {
	return max(last+1, now.UnixMicro())
}

// postOf is the post a delivery made, as far as the latch still keeps it.
func (l *latch) postOf(d EventDelivery) EventPost {
	for _, p := range l.in.Posts {
		if p.Seq == d.Seq {
			return p
		}
	}
	return EventPost{Seq: d.Seq, PostedAt: d.At, DeliveryID: d.ID, Payload: json.RawMessage("null")}
}

// subscribe takes a wait on: a wait that a kept post passes is told the
// newest such post at once, and not kept. A latch that holds as many
// waits, or as many bytes of their patterns, as it may refuses a new
// one: the wait ends with an error that says so.
func (l *latch) subscribe(s EventSubscription) {
	if s.Wake {
		s.AfterSeq = max(s.AfterSeq, l.in.LastSeq)
	} else {
		for i := len(l.in.Posts) - 1; i >= 0; i-- {
			if l.matches(l.in.Posts[i], s.Match, s.AfterSeq) {
				l.tell(s.WaitID, l.in.Posts[i])
				return
			}
		}
	}
	l.in.Subscribers = slices.DeleteFunc(l.in.Subscribers, func(o EventSubscription) bool { return o.WaitID == s.WaitID && o.Wake == s.Wake })
	patternBytes := len(s.Match)
	for _, o := range l.in.Subscribers {
		patternBytes += len(o.Match)
	}
	if len(l.in.Subscribers) >= MaxEventSubscribers || patternBytes > MaxEventPatternBytes {
		l.outbox = append(l.outbox, tellItem{waitID: s.WaitID, refuse: fmt.Sprintf(
			"event %s holds as many waits as it may (%d waits, %d KiB of match patterns): wait again later, or wait on another event",
			l.in.Name, MaxEventSubscribers, MaxEventPatternBytes/1024)})
		return
	}
	l.in.Subscribers = append(l.in.Subscribers, s)
}

// tell queues a post for a wait.
func (l *latch) tell(waitID string, p EventPost) {
	l.outbox = append(l.outbox, tellItem{waitID: waitID, post: &p})
}

// matches reports whether post passes a wait's filter (see matchesPost),
// compiling each pattern once.
func (l *latch) matches(post EventPost, pattern string, afterSeq int64) bool {
	if post.Seq <= afterSeq {
		return false
	}
	if pattern == "" {
		return true
	}
	re, ok := l.patterns[pattern]
	if !ok {
		re, _ = regexp.Compile(pattern)
		if len(l.patterns) > 2*MaxEventSubscribers {
			clear(l.patterns)
		}
		l.patterns[pattern] = re
	}
	return re != nil && re.Match(post.Payload)
}

// expire drops the posts and deliveries older than the retention and the
// waits whose bound has ended.
func (l *latch) expire(now time.Time) {
	cutoff := now.Add(-l.retention())
	l.in.Posts = slices.DeleteFunc(l.in.Posts, func(p EventPost) bool { return !p.PostedAt.After(cutoff) })
	l.in.Deliveries = slices.DeleteFunc(l.in.Deliveries, func(d EventDelivery) bool { return !d.At.After(cutoff) })
	l.in.Subscribers = slices.DeleteFunc(l.in.Subscribers, func(s EventSubscription) bool { return !s.Until.After(now) })
}

// trimPosts keeps at most MaxLatchedPosts posts of at most MaxLatchedBytes
// together, the newest.
func (l *latch) trimPosts() {
	total := 0
	for i := len(l.in.Posts) - 1; i >= 0; i-- {
		total += len(l.in.Posts[i].Payload)
		if len(l.in.Posts)-i > MaxLatchedPosts || total > MaxLatchedBytes {
			l.in.Posts = slices.Delete(l.in.Posts, 0, i+1)
			return
		}
	}
}

// nextExpiry is when the next post, delivery or wait expires.
func (l *latch) nextExpiry() (time.Time, bool) {
	var next time.Time
	consider := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	retention := l.retention()
	for _, p := range l.in.Posts {
		consider(p.PostedAt.Add(retention))
	}
	if len(l.in.Deliveries) > 0 {
		consider(l.in.Deliveries[0].At.Add(retention))
	}
	for _, s := range l.in.Subscribers {
		consider(s.Until)
	}
	return next, !next.IsZero()
}

// retention is the latch's retention, DefaultEventRetention when none was
// given.
func (l *latch) retention() time.Duration {
	if l.in.Retention > 0 {
		return l.in.Retention
	}
	return DefaultEventRetention
}
