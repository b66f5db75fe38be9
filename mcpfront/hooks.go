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
// as its principal; any other request needs what /mcp needs (a bearer
// token of [auth], or the local user on a loopback listener without it)
// and posts as its principal. The body is the payload (JSON, at most
// workflows.MaxEventPayloadBytes; empty is null); a delivery ID header
// (X-GitHub-Delivery, X-Gitlab-Event-UUID, Idempotency-Key) makes a
// redelivery the same post. The answer is post_event's, as JSON.
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
		principal, ok := f.admitHook(w, r, admission, set, name, body)
		if !ok {
			return
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
		delivery := hooks.DeliveryID(r.Header)
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

// admitHook judges a hook request: by its hook's secret when it is signed,
// else as /mcp would. It answers the request itself when it refuses it.
func (f *Front) admitHook(w http.ResponseWriter, r *http.Request, admission *mcpwire.Admission, set *hooks.Set, name string, body []byte) (string, bool) {
	if !hooks.Signed(r.Header) {
		return admission.Admit(w, r)
	}
	hook, err := set.Verify(name, r.Header, body)
	switch {
	case errors.Is(err, hooks.ErrUnknownHook):
		http.Error(w, "no hook named "+name+" is configured (events.hooks_file): a signed delivery needs one", http.StatusNotFound)
		return "", false
	case err != nil:
		f.opts.Logger.Warn("a hook delivery was refused", "event", name, "remote", r.RemoteAddr, "error", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return "", false
	}
	return hook.Principal, true
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
