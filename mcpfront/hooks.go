package mcpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/durawait/durawait/internal/hooks"
	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// HooksHandler serves POST /hooks/{name}: a post to the event called name
// from a system that is not an MCP client (a CI callback, a deploy
// pipeline). A request signed for a configured hook (GitHub's
// X-Hub-Signature-256, GitLab's X-Gitlab-Token) posts to the hook's event
// as its principal (any refusal is the same 401, which tells no hook's
// existence); any other request needs what /mcp needs (a bearer
// token of [auth], or the local user on a loopback listener without it)
// and posts as its principal. The body is the payload (JSON, at most
// workflows.MaxEventPayloadBytes; empty is null); a redelivery is the same
// post (see hooks.DeliveryID). The answer is post_event's, as JSON.
func (f *Front) HooksHandler(opts mcpwire.HTTPOptions, set *hooks.Set) http.Handler {
	admission := mcpwire.NewAdmission(opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "/hooks/{name} takes POST only", http.StatusMethodNotAllowed)
			return
		}
		name := r.PathValue("name")
		if rule := workflows.CheckEventName(name); rule != "" {
			http.Error(w, "event name: "+rule, http.StatusNotFound)
			return
		}
		// An unsigned request is admitted as /mcp's are before its body
		// is read; a signed one is judged by its signature of the body.
		var principal string
		if !hooks.Signed(r.Header) {
			var ok bool
			if principal, ok = admission.Admit(w, r); !ok {
				return
			}
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, workflows.MaxEventPayloadBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, fmt.Sprintf("the body is over the hook limit of %d bytes: post a smaller payload (a summary, or a link to the rest)", workflows.MaxEventPayloadBytes), http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "read the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var hook hooks.Hook
		if hooks.Signed(r.Header) {
			var ok bool
			if hook, ok = f.verifyHook(w, r, set, name, body); !ok {
				return
			}
			principal = hook.Principal
		}
		if hooks.Ping(r.Header) {
			writeJSON(w, map[string]any{"name": name, "ping": true})
			return
		}
		payload := json.RawMessage("null")
		if len(bytes.TrimSpace(body)) > 0 {
			if payload, err = workflows.CompactPayload(body); err != nil {
				http.Error(w, "the body must be a JSON payload: it "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		delivery := hooks.DeliveryID(hook, r.Header, body)
		if delivery != "" {
			if rule := workflows.CheckDeliveryID(delivery); rule != "" {
				http.Error(w, "delivery ID: "+rule, http.StatusBadRequest)
				return
			}
		}
		answer, err := f.Post(r.Context(), principal, name, workflows.EventPostRequest{
			Payload: payload, Source: workflows.EventSourceHook, DeliveryID: delivery,
		})
		if err != nil {
			f.opts.Logger.Warn("a hook's post failed", "event", name, "error", err)
			w.Header().Set("Retry-After", "5")
			http.Error(w, "the post was not kept: "+workflowErrorMessage(err)+"; deliver it again (with the same delivery ID it posts once)", http.StatusServiceUnavailable)
			return
		}
		f.opts.Logger.Info("hook delivered", "event", name, "caller", workflows.CallerValue(principal), "seq", answer.Seq,
			"duplicate", answer.Duplicate, "answered", answer.Answered, "delivery", delivery)
		writeJSON(w, answer)
	})
}

// hookRefusal is the answer to every signed delivery refused: the same
// whether the hook does not exist, takes another scheme or another secret.
const hookRefusal = "the signature does not match the secret of a hook of that name (GitHub: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>; GitLab: X-Gitlab-Token: <the secret>)"

// verifyHook judges a signed request by its hook's secret, and answers it
// itself (401) when it refuses it. An unknown hook is refused as a bad
// signature is, so that the answers do not tell which hooks exist (the log
// says which it was).
func (f *Front) verifyHook(w http.ResponseWriter, r *http.Request, set *hooks.Set, name string, body []byte) (hooks.Hook, bool) {
	hook, err := set.Verify(name, r.Header, body)
	if err == nil {
		return hook, true
	}
	f.opts.Logger.Warn("a hook delivery was refused", "event", name, "remote", r.RemoteAddr, "error", err)
	http.Error(w, hookRefusal, http.StatusUnauthorized)
	return hooks.Hook{}, false
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
