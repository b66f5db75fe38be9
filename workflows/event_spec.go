package workflows

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"time"
)

// Events: a named, durable latch that posts end waits on. A post (the
// post_event tool, or POST /hooks/{name}) is kept by the event's latch
// workflow (EventLatch) for the operator's retention, so a wait begun
// after it answers at once; a wait_for_event (WaitForEvent) ends the
// moment a post it matches is kept; a wait_for may name an event as its
// wake-up, which samples its probe at once on each post.

// Limits of the events' arguments (their input schemas).
const (
	// MaxEventNameBytes bounds an event's name.
	MaxEventNameBytes = 100
	// MaxEventPayloadBytes bounds a post's payload, as compact JSON (a
	// hook's body is bounded by the same number).
	MaxEventPayloadBytes = 64 * 1024
	// MaxDeliveryIDBytes bounds a post's delivery ID.
	MaxDeliveryIDBytes = 128
	// MaxLatchedPosts is how many posts an event's latch keeps at most
	// (the newest), within the retention.
	MaxLatchedPosts = 16
	// MaxLatchedBytes bounds the payloads an event's latch keeps, together:
	// the oldest posts go first.
	MaxLatchedBytes = 256 * 1024
	// MaxRememberedDeliveries bounds the delivery IDs an event's latch
	// remembers (within the retention), the oldest forgotten first.
	MaxRememberedDeliveries = 1024
	// MaxEventSubscribers bounds the waits one event's latch holds at
	// once, and MaxEventPatternBytes their match patterns together: a wait
	// beyond either is refused (it ends with an error that says so). With
	// the posts and the deliveries, a latch's state stays under 1 MiB, half
	// of Temporal's limit of the input it continues as new with.
	MaxEventSubscribers  = 1000
	MaxEventPatternBytes = 256 * 1024
	// DefaultEventRetention is how long a post is kept when the operator
	// sets none ([events] retention).
	DefaultEventRetention = 24 * time.Hour
)

// Where a post came from (EventPost.Source).
const (
	EventSourceMCP  = "mcp"
	EventSourceHook = "hook"
)

// eventNamePattern is an event's name: letters, digits, '.', '_' and '-',
// beginning with a letter or digit; it is a path segment of the hook URL and
// of the latch's workflow ID.
var eventNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckEventName says what is wrong with name as an event's name, or "".
func CheckEventName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > MaxEventNameBytes:
		return fmt.Sprintf("must be at most %d bytes (got %d)", MaxEventNameBytes, len(name))
	case !eventNamePattern.MatchString(name):
		return fmt.Sprintf("%q must match ^[A-Za-z0-9][A-Za-z0-9._-]*$ (letters, digits, '.', '_' and '-')", name)
	}
	return ""
}

// EventPost is one post of an event, as its latch keeps it and a
// wait_for_event answers it.
type EventPost struct {
	// Seq numbers the event's posts, increasing in the order its latch
	// kept them (see nextSeq: the time of the post in microseconds, or one
	// more than the post before it).
	Seq int64 `json:"seq"`
	// Payload is the post's JSON value, compact.
	Payload json.RawMessage `json:"payload"`
	// PostedAt is when the latch kept it.
	PostedAt time.Time `json:"posted_at"`
	// Source is EventSourceMCP or EventSourceHook.
	Source string `json:"source"`
	// DeliveryID is the poster's ID of the delivery, when it gave one: a
	// second post with it is the same post.
	DeliveryID string `json:"delivery_id,omitempty"`
}

// WaitForEventSpec is a parsed wait_for_event call.
type WaitForEventSpec struct {
	Name string `json:"name"`
	// Match, when set, is an RE2 pattern a post's payload (as compact
	// JSON) must match.
	Match string `json:"match,omitempty"`
	// AfterSeq, when set, skips the posts numbered up to it (the seq of
	// the post a wait answered before).
	AfterSeq int64 `json:"after_seq,omitempty"`
	// MaxWaitSec is the effective bound, after clamping.
	MaxWaitSec int `json:"max_wait_sec"`
}

// MaxWait is the wait's bound.
func (s WaitForEventSpec) MaxWait() time.Duration { return time.Duration(s.MaxWaitSec) * time.Second }

// PostEventSpec is a parsed post_event call.
type PostEventSpec struct {
	Name       string          `json:"name"`
	Payload    json.RawMessage `json:"payload"`
	DeliveryID string          `json:"delivery_id,omitempty"`
}

var (
	waitForEventFields = []string{"name", "match", "after_seq", "max_wait_sec"}
	postEventFields    = []string{"name", "payload", "delivery_id"}
)

// ParseWaitForEvent checks wait_for_event's arguments against its input
// schema and applies the defaults; the error names each broken rule's field.
func ParseWaitForEvent(raw json.RawMessage) (WaitForEventSpec, error) {
	var errs fieldErrors
	obj, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return WaitForEventSpec{}, errs.err()
	}
	rejectUnknown(obj, "", waitForEventFields, &errs)
	spec := WaitForEventSpec{Name: parseEventName(obj, &errs), MaxWaitSec: DefaultMaxWaitSec}
	if v, present := obj["match"]; present {
		if p, ok := parsePattern(v, "match", &errs); ok {
			spec.Match = p
		}
	}
	if v, present := obj["after_seq"]; present {
		spec.AfterSeq = parseSeq(v, "after_seq", &errs)
	}
	if v, present := obj["max_wait_sec"]; present {
		if n, ok := parseSeconds(v, "max_wait_sec", &errs); ok {
			spec.MaxWaitSec = min(n, MaxWaitCeilingSec)
		}
	}
	if err := errs.err(); err != nil {
		return WaitForEventSpec{}, err
	}
	return spec, nil
}

// ParsePostEvent checks post_event's arguments against its input schema; the
// error names each broken rule's field. The payload (null when omitted) is
// kept as compact JSON.
func ParsePostEvent(raw json.RawMessage) (PostEventSpec, error) {
	var errs fieldErrors
	obj, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return PostEventSpec{}, errs.err()
	}
	rejectUnknown(obj, "", postEventFields, &errs)
	spec := PostEventSpec{Name: parseEventName(obj, &errs), Payload: json.RawMessage("null")}
	if v, present := obj["payload"]; present {
		if p, err := CompactPayload(v); err != nil {
			errs.add("payload", err.Error())
		} else {
			spec.Payload = p
		}
	}
	if v, present := obj["delivery_id"]; present {
		var id string
		if decodeString(v, &id, "delivery_id", "", &errs) {
			if rule := CheckDeliveryID(id); rule != "" {
				errs.add("delivery_id", rule)
			} else {
				spec.DeliveryID = id
			}
		}
	}
	if err := errs.err(); err != nil {
		return PostEventSpec{}, err
	}
	return spec, nil
}

// CompactPayload is raw as compact JSON, or why it cannot be a payload
// (not JSON, or over MaxEventPayloadBytes).
func CompactPayload(raw []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, bytes.TrimSpace(raw)); err != nil {
		return nil, fmt.Errorf("is not valid JSON: %w", err)
	}
	if buf.Len() > MaxEventPayloadBytes {
		return nil, fmt.Errorf("must be at most %d bytes as compact JSON (got %d)", MaxEventPayloadBytes, buf.Len())
	}
	return buf.Bytes(), nil
}

// CheckDeliveryID says what is wrong with id as a delivery ID, or "".
func CheckDeliveryID(id string) string {
	switch {
	case id == "":
		return "must not be empty"
	case len(id) > MaxDeliveryIDBytes:
		return fmt.Sprintf("must be at most %d bytes (got %d)", MaxDeliveryIDBytes, len(id))
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return "must be printable ASCII without spaces"
		}
	}
	return ""
}

// parseEventName reads the required member "name".
func parseEventName(obj map[string]json.RawMessage, errs *fieldErrors) string {
	return parseEventNameField(obj, "name", errs)
}

// parseEventNameField reads the required member field, an event's name.
func parseEventNameField(obj map[string]json.RawMessage, field string, errs *fieldErrors) string {
	raw, present := obj[field]
	if !present {
		errs.add(field, "is required")
		return ""
	}
	var name string
	if !decodeString(raw, &name, field, "", errs) {
		return ""
	}
	if rule := CheckEventName(name); rule != "" {
		errs.add(field, rule)
		return ""
	}
	return name
}

// parseSeq reads a post's sequence number: a whole number of at least 0,
// written as JSON writes it (2.0 and 1e3 are whole numbers too).
func parseSeq(raw json.RawMessage, field string, errs *fieldErrors) int64 {
	var n json.Number
	if kind := jsonKind(bytes.TrimSpace(raw)); kind != "a number" {
		errs.add(field, fmt.Sprintf("must be a whole number (got %s)", kind))
		return 0
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		errs.add(field, "must be a whole number")
		return 0
	}
	if v, err := n.Int64(); err == nil && v >= 0 {
		return v
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f != math.Trunc(f) || f > maxSeq {
		errs.add(field, fmt.Sprintf("must be a whole number of at least 0 (got %s)", n))
		return 0
	}
	return int64(f)
}

// maxSeq is the largest after_seq taken: 2^53, the largest whole number a
// JSON client's double holds exactly (a seq is far below it).
const maxSeq = 1 << 53

// EventLatchID is the workflow ID of an event's latch: "event/<name>" for
// the local user, "event/<tag>/<name>" for any other principal (see
// scopedID), and "event/shared/<name>" for an event the operator shares
// between every principal.
func EventLatchID(principal, name string, shared bool) string {
	if shared {
		return EventIDPrefix + SharedEventTag + "/" + name
	}
	return scopedID(EventIDPrefix, principal, name)
}

// WorkflowID is the ID of the workflow that runs this wait on the latch
// latchID: "wait_for_event/[<tag>/]<hash>", the hash (24 hex digits of a
// SHA-256) of the spec, the latch and the principal. Identical calls share
// an ID, so a repeated call attaches to the running wait.
func (s WaitForEventSpec) WorkflowID(latchID, principal string) string {
	key, err := json.Marshal([]any{s, latchID, principal})
	if err != nil {
		// WaitForEventSpec holds only strings and numbers.
		panic(fmt.Sprintf("workflows: marshal wait_for_event spec: %v", err))
	}
	sum := sha256.Sum256(key)
	return scopedID(WaitForEventIDPrefix, principal, hex.EncodeToString(sum[:12]))
}

// matchesPost reports whether post passes a wait's filter: numbered after
// afterSeq, and its payload matched by pattern (when set). A pattern that
// does not compile (ParseWaitForEvent checked it) matches nothing.
func matchesPost(post EventPost, pattern string, afterSeq int64) bool {
	if post.Seq <= afterSeq {
		return false
	}
	if pattern == "" {
		return true
	}
	re, err := regexp.Compile(pattern)
	return err == nil && re.Match(post.Payload)
}
