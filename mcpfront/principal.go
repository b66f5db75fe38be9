package mcpfront

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
)

// Principals. Every workflow a caller starts carries its principal in its
// ID, so that one principal's waits, invocations and tasks are out of reach
// of another's: a workflow ID is <kind>/<rest> for the local user (the
// principal "": no authentication, or stdio; these are the IDs durawait
// used before authentication existed) and <kind>/<tag>/<rest> for any other
// principal, where the tag is a hash of the principal. A caller may only
// use the workflows whose tag is its own, and an ID of another principal's
// is answered exactly like an unknown one.

// ownerTag is the tag of principal in workflow IDs; "" for the local user.
func ownerTag(principal string) string {
	if principal == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("durawait principal\x00" + principal))
	return "p" + hex.EncodeToString(sum[:12])
}

// scopedID is the workflow ID of kind and rest for principal.
func scopedID(kind, principal, rest string) string {
	if tag := ownerTag(principal); tag != "" {
		return kind + "/" + tag + "/" + rest
	}
	return kind + "/" + rest
}

// owns reports whether workflowID belongs to principal.
func owns(principal, workflowID string) bool {
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

// principalMemo adds the principal to a workflow's memo, for operators;
// nothing is added for the local user, whose memos stay as they were.
func principalMemo(memo map[string]any, principal string) map[string]any {
	if principal == "" {
		return memo
	}
	if memo == nil {
		memo = map[string]any{}
	}
	memo["principal"] = principal
	return memo
}

// holds counts, by workflow ID, the callers of this front end attached to
// a wait that a caller's hang-up would otherwise cancel (wait_for_text).
type holds struct {
	mu sync.Mutex
	n  map[string]int
}

// hold records one more caller attached to id. The returned release
// records that it left, once, and reports whether it was the last.
func (h *holds) hold(id string) (release func() (last bool)) {
	h.mu.Lock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[id]++
	h.mu.Unlock()
	var once sync.Once
	var last bool
	return func() bool {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.n[id]--
			if h.n[id] <= 0 {
				delete(h.n, id)
				last = true
			}
		})
		return last
	}
}
