package hooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secret = "0123456789abcdef-secret"

func noRule(string) string { return "" }

func write(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hooks.toml")
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
	require.NoError(t, os.Chmod(path, mode))
	return path
}

func sign(body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestVerifyChecksEachSchemesSignature(t *testing.T) {
	set, err := Load(write(t, `
[[hook]]
name = "gh"
scheme = "github"
secret = "`+secret+`"
principal = "alice"

[[hook]]
name = "gl"
scheme = "gitlab"
secret = "`+secret+`"
`, 0o600), noRule, nil)
	require.NoError(t, err)
	body := `{"ok":true}`
	h := http.Header{}
	h.Set(HeaderGitHubSignature, sign(body))
	hook, err := set.Verify("gh", h, []byte(body))
	require.NoError(t, err)
	assert.Equal(t, "alice", hook.Principal)
	_, err = set.Verify("gh", h, []byte(body+" "))
	assert.ErrorIs(t, err, ErrBadSignature, "another body")
	h.Set(HeaderGitHubSignature, strings.TrimPrefix(sign(body), "sha256="))
	_, err = set.Verify("gh", h, []byte(body))
	assert.ErrorIs(t, err, ErrBadSignature, "no scheme prefix")

	g := http.Header{}
	g.Set(HeaderGitLabToken, secret)
	hook, err = set.Verify("gl", g, nil)
	require.NoError(t, err)
	assert.Equal(t, "", hook.Principal, "the local user by default")
	g.Set(HeaderGitLabToken, secret+"x")
	_, err = set.Verify("gl", g, nil)
	assert.ErrorIs(t, err, ErrBadSignature)
	_, err = set.Verify("gh", g, nil)
	assert.ErrorIs(t, err, ErrBadSignature, "a GitHub hook takes no GitLab token")

	_, err = set.Verify("nope", h, nil)
	assert.ErrorIs(t, err, ErrUnknownHook)
	var none *Set
	_, err = none.Verify("gh", h, nil)
	assert.ErrorIs(t, err, ErrUnknownHook, "no hooks file: no hook")
}

func TestLoadRefusesAnOpenFileAndNamesEachBrokenRule(t *testing.T) {
	_, err := Load(write(t, "", 0o604), noRule, nil)
	assert.ErrorContains(t, err, "mode 0604 lets other users of the machine read its secrets or change its hooks")
	_, err = Load(write(t, "", 0o620), noRule, nil)
	assert.ErrorContains(t, err, "mode 0620", "a group that may write adds hooks")
	_, err = Load(write(t, "", 0o640), noRule, nil)
	assert.NoError(t, err, "a group the service runs in may read it")
	_, err = Load(write(t, `
[[hook]]
name = "x"
scheme = "bitbucket"
secret = "short"

[[hook]]
name = "x"
scheme = "github"
secret = "`+secret+`"
`, 0o600), func(n string) string {
		if n == "x" {
			return ""
		}
		return "bad"
	}, nil)
	require.Error(t, err)
	for _, want := range []string{`hook[0].scheme: must be "github" or "gitlab" (got "bitbucket")`, "hook[0].secret: must be at least 16 characters", `hook[1].name: hook "x" is listed twice`} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = Load(write(t, "[[hook]]\nname = \"x\"\nkey = 1\n", 0o600), noRule, nil)
	assert.ErrorContains(t, err, "unknown key hook.key")
}

func TestAChangedFileIsReadAgainAndABrokenOneKeepsTheHooks(t *testing.T) {
	path := write(t, "[[hook]]\nname = \"a\"\nscheme = \"gitlab\"\nsecret = \""+secret+"\"\n", 0o600)
	var reloadErr error
	set, err := Load(path, noRule, func(err error) { reloadErr = err })
	require.NoError(t, err)
	g := http.Header{}
	g.Set(HeaderGitLabToken, secret)
	require.NoError(t, os.WriteFile(path, []byte("[[hook]]\nname = \"b\"\nscheme = \"gitlab\"\nsecret = \""+secret+"\"\n"), 0o600))
	set.mu.Lock()
	set.checked = time.Time{} // as if a second passed
	set.mu.Unlock()
	_, err = set.Verify("b", g, nil)
	require.NoError(t, err, "the new hook")
	_, err = set.Verify("a", g, nil)
	assert.ErrorIs(t, err, ErrUnknownHook, "the old one gone")

	require.NoError(t, os.WriteFile(path, []byte("not toml ["), 0o600))
	set.mu.Lock()
	set.checked = time.Time{}
	set.mu.Unlock()
	_, err = set.Verify("b", g, nil)
	require.NoError(t, err, "a file that no longer parses keeps the hooks")
	require.Error(t, reloadErr)
	assert.Contains(t, reloadErr.Error(), "the hooks read before stay in force")

	require.NoError(t, os.Remove(path))
	set.mu.Lock()
	set.checked = time.Time{}
	set.mu.Unlock()
	_, err = set.Verify("b", g, nil)
	assert.ErrorIs(t, err, ErrUnknownHook, "a removed file revokes every hook")
	assert.Contains(t, reloadErr.Error(), "is gone")
}

func TestDeliveryIDAndPing(t *testing.T) {
	h := http.Header{}
	assert.Equal(t, "", DeliveryID(Hook{}, h, nil))
	h.Set("Idempotency-Key", "k")
	assert.Equal(t, "k", DeliveryID(Hook{}, h, nil))
	h.Set("X-GitHub-Delivery", "gh")
	assert.Equal(t, "gh", DeliveryID(Hook{Scheme: SchemeGitLab}, h, nil), "the CI system's own ID first")
	github := Hook{Scheme: SchemeGitHub}
	id := DeliveryID(github, h, []byte(`{"a":1}`))
	assert.True(t, strings.HasPrefix(id, "sha256:"), id)
	h.Set("X-GitHub-Delivery", "another")
	assert.Equal(t, id, DeliveryID(github, h, []byte(`{"a":1}`)), "an HMAC-signed delivery is its body: another header replays it")
	assert.NotEqual(t, id, DeliveryID(github, h, []byte(`{"a":2}`)))
	assert.False(t, Ping(h))
	h.Set("X-GitHub-Event", "ping")
	assert.True(t, Ping(h))
	assert.False(t, Signed(h))
	h.Set(HeaderGitLabToken, "t")
	assert.True(t, Signed(h))
}
