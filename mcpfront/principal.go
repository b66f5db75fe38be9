package mcpfront

import (
	"sync"
)

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
