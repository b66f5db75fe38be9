package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	githubSecret = "gh-hook-secret-0123456789abcdef"
	gitlabSecret = "gl-hook-secret-0123456789abcdef"
)

// withHooks writes a hooks file (a GitHub hook ci-done, a GitLab hook
// deploy-done, and a GitHub hook alice-ci posting to alice's event) and
// names it, with extra [events] keys, in config.
func (w *workspace) withHooks(config, extra string) string {
	w.t.Helper()
	w.write("hooks.toml", fmt.Sprintf(`[[hook]]
name = "ci-done"
scheme = "github"
secret = %q

[[hook]]
name = "deploy-done"
scheme = "gitlab"
secret = %q

[[hook]]
name = "alice-ci"
scheme = "github"
secret = %q
principal = "alice"
`, githubSecret, gitlabSecret, githubSecret))
	require.NoError(w.t, os.Chmod(w.path("hooks.toml"), 0o600))
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(w.t, err)
	defer f.Close()
	_, err = fmt.Fprintf(f, "\n[events]\nhooks_file = %q\n%s\n", w.path("hooks.toml"), extra)
	require.NoError(w.t, err)
	return config
}

// githubSignature is X-Hub-Signature-256's value for body.
func githubSignature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// curlPost posts body to url with headers using the real curl, and returns
// the status and the body of the answer.
func curlPost(t testing.TB, url string, body []byte, headers ...string) (int, string) {
	t.Helper()
	args := []string{"-sS", "-X", "POST", "-o", "-", "-w", "\n%{http_code}", "--data-binary", "@-", "-H", "Content-Type: application/json"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	cmd := exec.Command("curl", append(args, url)...)
	cmd.Stdin = strings.NewReader(string(body))
	out, err := cmd.Output()
	require.NoError(t, err, "curl %s", url)
	text := strings.TrimRight(string(out), "\n")
	i := strings.LastIndexByte(text, '\n')
	require.GreaterOrEqual(t, i, 0, text)
	return atoi(text[i+1:]), text[:i]
}

// A CI system's callback, as GitHub and GitLab send it, with the real curl:
// a signed delivery ends the wait on its event with the body as payload; a
// redelivery is the same post; a bad signature, an unknown hook, an
// oversized or non-JSON body, and a method other than POST post nothing.
func TestHooksPostSignedCallbacks(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.withHooks(w.writeConfig(), ""))
	c := inst.client(t)
	url := "http://" + inst.http + "/hooks/"

	waiting := make(chan eventWait, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		got, err := c.tryWaitEvent(ctx, map[string]any{"name": "ci-done", "match": `"conclusion":"success"`})
		if err != nil {
			t.Error(err)
		}
		waiting <- got
	}()
	tc := temporalClient(t, w.owner().Engine)
	eventually(t, "the wait subscribed", func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), "event/ci-done", "")
		return err == nil
	})

	failed := []byte(`{"action":"completed","workflow_run":{"conclusion":"failure"}}`)
	status, body := curlPost(t, url+"ci-done", failed, "X-Hub-Signature-256: "+githubSignature(githubSecret, failed),
		"X-GitHub-Event: workflow_run", "X-GitHub-Delivery: run-1")
	require.Equal(t, 200, status, body)
	var a postAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	assert.Equal(t, 0, a.Answered, "the failure does not match the wait")
	failedSeq := a.Seq

	ok := []byte(`{"action": "completed", "workflow_run": {"conclusion": "success", "head_sha": "abc"}}`)
	sig := githubSignature(githubSecret, ok)
	status, body = curlPost(t, url+"ci-done", ok, "X-Hub-Signature-256: "+sig, "X-GitHub-Event: workflow_run", "X-GitHub-Delivery: run-2")
	require.Equal(t, 200, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	assert.Greater(t, a.Seq, failedSeq)
	okSeq := a.Seq
	got := <-waiting
	assert.Equal(t, "posted", got.Reason)
	require.NotNil(t, got.Event)
	assert.Equal(t, "hook", got.Event.Source)
	assert.True(t, strings.HasPrefix(got.Event.DeliveryID, "sha256:"), "an HMAC-signed delivery is named by its body: %s", got.Event.DeliveryID)
	assert.JSONEq(t, string(ok), string(got.Event.Payload))

	// GitHub redelivers: the same delivery is the same post, and so is a
	// captured one replayed under another delivery header (the signature
	// covers the body alone).
	for _, header := range []string{"X-GitHub-Delivery: run-2", "X-GitHub-Delivery: forged-3", "Idempotency-Key: forged-4"} {
		status, body = curlPost(t, url+"ci-done", ok, "X-Hub-Signature-256: "+sig, header)
		require.Equal(t, 200, status, body)
		require.NoError(t, json.Unmarshal([]byte(body), &a))
		assert.True(t, a.Duplicate, header)
		assert.Equal(t, okSeq, a.Seq, header)
	}
	// A ping (a webhook just created) posts nothing.
	status, body = curlPost(t, url+"ci-done", []byte(`{"zen":"hi"}`), "X-Hub-Signature-256: "+githubSignature(githubSecret, []byte(`{"zen":"hi"}`)), "X-GitHub-Event: ping")
	assert.Equal(t, 200, status, body)
	assert.Contains(t, body, `"ping":true`)

	// GitLab's token.
	deploy := []byte(`{"object_kind":"deployment","status":"success"}`)
	status, body = curlPost(t, url+"deploy-done", deploy, "X-Gitlab-Token: "+gitlabSecret, "X-Gitlab-Event-UUID: gl-1")
	require.Equal(t, 200, status, body)
	assert.Equal(t, "posted", c.waitEvent(t, map[string]any{"name": "deploy-done"}).Reason)

	// Hostile deliveries: each is refused, and posts nothing.
	for _, tc := range []struct {
		name, path string
		body       []byte
		headers    []string
		status     int
		want       string
	}{
		{"a wrong signature", "ci-done", ok, []string{"X-Hub-Signature-256: " + githubSignature("not-the-secret-at-all", ok)}, 401, "signature does not match"},
		{"a signature of another body", "ci-done", []byte(`{"conclusion":"success","evil":1}`), []string{"X-Hub-Signature-256: " + sig}, 401, "signature does not match"},
		{"a signature without its scheme", "ci-done", ok, []string{"X-Hub-Signature-256: " + strings.TrimPrefix(sig, "sha256=")}, 401, "sha256=<hex"},
		{"a signature not in hex", "ci-done", ok, []string{"X-Hub-Signature-256: sha256=zz"}, 401, "sha256=<hex"},
		{"a GitLab token for a GitHub hook", "ci-done", ok, []string{"X-Gitlab-Token: " + gitlabSecret}, 401, "signature does not match"},
		{"a wrong GitLab token", "deploy-done", deploy, []string{"X-Gitlab-Token: " + githubSecret}, 401, "signature does not match"},
		// Refused as a bad signature is: the answer tells no hook's existence.
		{"an unknown hook", "nope", ok, []string{"X-Hub-Signature-256: " + sig}, 401, "signature does not match"},
		{"an event name that is no name", "..%2f..", ok, []string{"X-Hub-Signature-256: " + sig}, 404, "event name"},
		{"an oversized body", "ci-done", []byte(`"` + strings.Repeat("x", 70_000) + `"`), []string{"X-Hub-Signature-256: " + sig}, 413, "over the hook limit"},
		{"a body that is not JSON", "deploy-done", []byte("conclusion=success"), []string{"X-Gitlab-Token: " + gitlabSecret}, 400, "must be a JSON payload"},
		{"a bad delivery ID", "deploy-done", deploy, []string{"X-Gitlab-Token: " + gitlabSecret, "Idempotency-Key: " + strings.Repeat("k", 200)}, 400, "delivery ID"},
		{"an unsigned delivery with a signed one's body (no credential needed on loopback, but its own post)", "nope-unsigned", []byte("{"), nil, 400, "must be a JSON payload"},
	} {
		status, body := curlPost(t, url+tc.path, tc.body, tc.headers...)
		assert.Equal(t, tc.status, status, "%s: %s", tc.name, body)
		assert.Contains(t, body, tc.want, tc.name)
	}
	out, err := exec.Command("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url+"ci-done").Output()
	require.NoError(t, err)
	assert.Equal(t, "405", string(out), "GET is refused")
	after := c.waitEvent(t, map[string]any{"name": "ci-done", "after_seq": okSeq, "max_wait_sec": 1})
	assert.Equal(t, "timeout", after.Reason, "no refused delivery was posted")
	resp, err := http.Get("http://" + inst.http + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "durawait is healthy after the hostile deliveries")
}

// Events belong to their principal: with [auth], a bearer token posts to
// its principal's own event, a hook to its configured principal's, and an
// unsigned delivery without a token is refused; a shared name is every
// principal's.
func TestHookAndEventsBelongToTheirPrincipal(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.withHooks(w.withTokens(w.writeConfig()), `shared = ["team-*"]`))
	alice, bob := inst.clientAs(t, aliceToken), inst.clientAs(t, bobToken)
	url := "http://" + inst.http + "/hooks/"

	status, body := curlPost(t, url+"release", []byte(`"bob's"`), "Authorization: Bearer "+bobToken)
	require.Equal(t, 200, status, body)
	assert.Equal(t, "timeout", alice.waitEvent(t, map[string]any{"name": "release", "max_wait_sec": 1}).Reason, "bob's event is not alice's")
	assert.Equal(t, "posted", bob.waitEvent(t, map[string]any{"name": "release", "max_wait_sec": 1}).Reason)

	status, body = curlPost(t, url+"release", []byte(`"anyone's"`))
	assert.Equal(t, 401, status, "no credential: %s", body)
	status, body = curlPost(t, url+"release", []byte(`"x"`), "Authorization: Bearer not-a-token-of-anyone")
	assert.Equal(t, 401, status, body)

	signed := []byte(`{"for":"alice"}`)
	status, body = curlPost(t, url+"alice-ci", signed, "X-Hub-Signature-256: "+githubSignature(githubSecret, signed))
	require.Equal(t, 200, status, body)
	assert.Equal(t, "posted", alice.waitEvent(t, map[string]any{"name": "alice-ci", "max_wait_sec": 1}).Reason, "the hook posts as its principal")
	assert.Equal(t, "timeout", bob.waitEvent(t, map[string]any{"name": "alice-ci", "max_wait_sec": 1}).Reason)

	bob.postEvent(t, map[string]any{"name": "team-release", "payload": "v2"})
	shared := alice.waitEvent(t, map[string]any{"name": "team-release", "max_wait_sec": 1})
	assert.Equal(t, "posted", shared.Reason, "a shared name is every principal's")
	assert.JSONEq(t, `"v2"`, string(shared.Event.Payload))
}
