package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Workflow IDs. Every workflow a caller starts carries its principal in its
// ID, so that one principal's waits, invocations and tasks are out of reach
// of another's: a workflow ID is <kind>/<rest> for the local user (the
// principal "": no authentication, or stdio) and <kind>/<tag>/<rest> for
// any other principal, where the tag is "p" and 24 hex digits of a hash of
// the principal. A caller may only use the workflows whose tag is its own.
// Each tool's ID is derived by one function below.

// The kinds of workflow IDs, each with its "/": every ID starts with one.
const (
	// WaitForIDPrefix starts the ID of a wait_for wait (WaitForSpec.WorkflowID).
	WaitForIDPrefix = "wait_for/"
	// WaitForTextIDPrefix starts the ID of a wait_for_text wait
	// (TextWaitSpec.WorkflowID).
	WaitForTextIDPrefix = "wait_for_text/"
	// AgentIDPrefix starts every invocation ID (InvocationID), which is also
	// its workflow ID.
	AgentIDPrefix = "agent/"
	// DownstreamCallIDPrefix starts the ID of one re-exposed tool call run
	// on a worker (DownstreamCallID).
	DownstreamCallIDPrefix = "call/"
	// ListPanesIDPrefix starts the ID of one list_panes call run on the
	// tmux host's worker (ListPanesID).
	ListPanesIDPrefix = "list_panes/"
	// EventIDPrefix starts the ID of an event's latch (EventLatchID).
	EventIDPrefix = "event/"
	// WaitForEventIDPrefix starts the ID of a wait_for_event wait
	// (WaitForEventSpec.WorkflowID).
	WaitForEventIDPrefix = "wait_for_event/"
	// CatalogIDPrefix starts the ID of a task queue's catalog workflow
	// (CatalogWorkflowID); it belongs to no caller.
	CatalogIDPrefix = "durawait-catalog/"
)

// SharedEventTag stands for the principal in the latch ID of an event the
// operator shares between every principal ([events] shared).
const SharedEventTag = "shared"

// WorkflowID is the ID of the workflow that runs this wait for principal:
// "wait_for/[<tag>/]<hash>", where the hash (24 hex digits of a SHA-256) is
// of the canonical probe, condition and bounds and the principal. Identical
// calls (same canonical probe, condition and bounds, same principal) share
// an ID, so a repeated call attaches to the running wait instead of
// starting another.
func (s WaitForSpec) WorkflowID(principal string) string {
	canonical, err := json.Marshal(struct {
		Spec      WaitForSpec `json:"spec"`
		Principal string      `json:"principal,omitempty"`
	}{s, principal})
	if err != nil {
		// WaitForSpec holds only strings, ints and a valid JSON object.
		panic(fmt.Sprintf("workflows: marshal wait_for spec: %v", err))
	}
	sum := sha256.Sum256(canonical)
	return scopedID(WaitForIDPrefix, principal, hex.EncodeToString(sum[:12]))
}

// WorkflowID is the ID of the workflow that watches this pane for the text
// on the tmux server of socket, for principal:
// "wait_for_text/[<tag>/]<hash>", where the hash (24 hex digits of a
// SHA-256) is of the socket, the spec and the principal. Identical calls
// share an ID, so a repeated call attaches to the running wait.
func (s TextWaitSpec) WorkflowID(socket, principal string) string {
	parts := []any{socket, s}
	if principal != "" {
		parts = append(parts, principal)
	}
	key, err := json.Marshal(parts)
	if err != nil {
		// TextWaitSpec holds only strings.
		panic(fmt.Sprintf("workflows: marshal wait_for_text spec: %v", err))
	}
	sum := sha256.Sum256(key)
	return scopedID(WaitForTextIDPrefix, principal, hex.EncodeToString(sum[:12]))
}

// InvocationID is the ID of a new agent invocation of principal (also its
// workflow ID): "agent/[<tag>/]<nonce in 32 hex digits>". The caller draws
// the nonce at random, so every start_agent call is a new invocation.
func InvocationID(principal string, nonce [16]byte) string {
	return scopedID(AgentIDPrefix, principal, hex.EncodeToString(nonce[:]))
}

// InvocationIDFor is the invocation ID of a start_agent call of principal
// with a request_id: the nonce is a hash of the request ID and every other
// argument, so the identical call made again (a retry whose answer was
// lost) names the same invocation, and a call that differs in anything
// names another.
func InvocationIDFor(principal string, spec AgentSpec) string {
	args, err := json.Marshal(spec)
	if err != nil {
		// AgentSpec holds only strings.
		panic(fmt.Sprintf("workflows: marshal start_agent spec: %v", err))
	}
	sum := sha256.Sum256(append([]byte("start_agent request\x00"+spec.RequestID+"\x00"), args...))
	var nonce [16]byte
	copy(nonce[:], sum[:])
	return InvocationID(principal, nonce)
}

// DownstreamCallID is the ID of one re-exposed tool call of principal:
// "call/[<tag>/]<nonce in 24 hex digits>". The caller draws the nonce at
// random: a tool call is never shared.
func DownstreamCallID(principal string, nonce [12]byte) string {
	return scopedID(DownstreamCallIDPrefix, principal, hex.EncodeToString(nonce[:]))
}

// ListPanesID is the ID of one list_panes call of principal:
// "list_panes/[<tag>/]<nonce in 24 hex digits>", the nonce drawn at random.
func ListPanesID(principal string, nonce [12]byte) string {
	return scopedID(ListPanesIDPrefix, principal, hex.EncodeToString(nonce[:]))
}

// CatalogWorkflowID is the ID of the catalog workflow of a task queue:
// "durawait-catalog/<task queue>", one per task queue, shared by its
// workers.
func CatalogWorkflowID(taskQueue string) string {
	return CatalogIDPrefix + taskQueue
}

// Owns reports whether workflowID belongs to principal.
func Owns(principal, workflowID string) bool {
	_, rest, ok := strings.Cut(workflowID, "/")
	if !ok {
		return false
	}
	tag, _, scoped := strings.Cut(rest, "/")
	if !scoped {
		tag = ""
	}
	return tag == ownerTag(principal)
}

// ownerTag is the tag of principal in workflow IDs; "" for the local user.
func ownerTag(principal string) string {
	if principal == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("durawait principal\x00" + principal))
	return "p" + hex.EncodeToString(sum[:12])
}

// scopedID is the workflow ID of prefix (a kind and its "/") and rest for
// principal.
func scopedID(prefix, principal, rest string) string {
	if tag := ownerTag(principal); tag != "" {
		return prefix + tag + "/" + rest
	}
	return prefix + rest
}
