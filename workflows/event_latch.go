package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
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
}

// EventLatch is the workflow that keeps an event's posts for its
// retention and tells them to the waits on it. A post is an update
// (EventPostUpdate), answered once the post is kept; a wait subscribes by
// signal (EventSubscribeSignal) and is told by signal (EventPostedSignal).
// The latch ends when it keeps no post and holds no wait, and continues as
// new when its history grows long.
//
// It shows DurawaitState running while it holds posts or waits, and
// expired when it ends.
func EventLatch(ctx workflow.Context, in EventLatchInput) error {
	markRunning(ctx)
	l := &latch{in: in}
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
		for {
			var sub EventSubscription
			if !subscribe.ReceiveAsync(&sub) {
				break
			}
			l.subscribe(ctx, sub)
		}
		l.expire(workflow.Now(ctx))
		if workflow.AllHandlersFinished(ctx) {
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
		sel.AddReceive(subscribe, func(workflow.ReceiveChannel, bool) {})
		if timer != nil {
			sel.AddFuture(timer, func(workflow.Future) { timer, cancelTimer = nil, nil })
		}
		// A post's handler that finished leaves nothing to do here; one that
		// is running (it never blocks) ends within this task.
		sel.Select(ctx)
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
	l.in.LastSeq++
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
		if !matchesPost(p, s.Match, s.AfterSeq) {
			kept = append(kept, s)
			continue
		}
		tell(ctx, s.WaitID, p)
		if s.Wake {
			answer.Woken++
			kept = append(kept, s)
		} else {
			answer.Answered = append(answer.Answered, AnsweredWait{WaitID: s.WaitID, Started: s.Started})
		}
	}
	l.in.Subscribers = kept
	return answer, nil
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
// newest such post at once, and not kept.
func (l *latch) subscribe(ctx workflow.Context, s EventSubscription) {
	if s.Wake {
		s.AfterSeq = max(s.AfterSeq, l.in.LastSeq)
	} else {
		for i := len(l.in.Posts) - 1; i >= 0; i-- {
			if matchesPost(l.in.Posts[i], s.Match, s.AfterSeq) {
				tell(ctx, s.WaitID, l.in.Posts[i])
				return
			}
		}
	}
	l.in.Subscribers = slices.DeleteFunc(l.in.Subscribers, func(o EventSubscription) bool { return o.WaitID == s.WaitID && o.Wake == s.Wake })
	if len(l.in.Subscribers) >= MaxEventSubscribers {
		first := 0
		for i, o := range l.in.Subscribers {
			if o.Until.Before(l.in.Subscribers[first].Until) {
				first = i
			}
		}
		l.in.Subscribers = slices.Delete(l.in.Subscribers, first, first+1)
	}
	l.in.Subscribers = append(l.in.Subscribers, s)
}

// tell signals a post to a wait. The latch does not wait for the signal's
// delivery: a wait that has ended meanwhile is no longer told.
func tell(ctx workflow.Context, waitID string, p EventPost) {
	workflow.SignalExternalWorkflow(ctx, waitID, "", EventPostedSignal, p)
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
