// Package hooks holds the per-hook secrets of POST /hooks/{name} and checks
// a delivery against them, with the schemes CI systems already send:
// GitHub's X-Hub-Signature-256 (an HMAC-SHA256 of the body) and GitLab's
// X-Gitlab-Token (the secret itself).
//
// The secrets live in their own file (events.hooks_file), never in the
// config file, which durawait copies into records other users may read:
//
//	[[hook]]
//	name = "ci-done"       # the event, and the URL's {name}
//	scheme = "github"      # github (X-Hub-Signature-256) or gitlab (X-Gitlab-Token)
//	secret = "a long random string"
//	principal = "alice"    # whose event it posts to; default the local user
package hooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// The schemes a hook may use.
const (
	SchemeGitHub = "github"
	SchemeGitLab = "gitlab"
)

// The headers the schemes send.
const (
	HeaderGitHubSignature = "X-Hub-Signature-256"
	HeaderGitLabToken     = "X-Gitlab-Token"
)

// minSecretLen is the shortest secret a hook may have.
const minSecretLen = 16

// statEvery bounds how often a Set looks at its file for changes.
const statEvery = time.Second

// Hook is one configured hook.
type Hook struct {
	Name      string
	Scheme    string
	Principal string
	secret    []byte
}

// Set is the hooks of a hooks file, read again when the file changes (its
// size or modification time, looked at no more than once a second); a
// file that no longer parses keeps the hooks read before.
type Set struct {
	path string

	mu      sync.Mutex
	hooks   map[string]Hook
	modTime time.Time
	size    int64
	checked time.Time
	// check is the event-name rule the hooks' names follow.
	check   func(string) string
	onError func(error)
	// lastError is the last reload failure told (report).
	lastError string
}

// Load reads a hooks file. checkName says what is wrong with a hook's
// name as an event's name ("" when nothing is). onError, when not nil,
// receives the error of an automatic reload that failed.
func Load(path string, checkName func(string) string, onError func(error)) (*Set, error) {
	s := &Set{path: path, onError: onError}
	if err := s.reload(checkName); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Set) reload(checkName func(string) string) error {
	// One open, its mode and its content read from the same file (no
	// swap between a stat and a read).
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("events.hooks_file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("events.hooks_file: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o027 != 0 {
		return fmt.Errorf("events.hooks_file %s: mode %04o lets other users of the machine read its secrets or change its hooks: "+
			"chmod 600 it (640 or 440 for a group the service runs in)", s.path, perm)
	}
	hooks, err := parse(f, s.path, checkName)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks, s.modTime, s.size, s.checked = hooks, st.ModTime(), st.Size(), time.Now()
	s.check = checkName
	return nil
}

func parse(r io.Reader, path string, checkName func(string) string) (map[string]Hook, error) {
	var file struct {
		Hook []struct {
			Name      string `toml:"name"`
			Scheme    string `toml:"scheme"`
			Secret    string `toml:"secret"`
			Principal string `toml:"principal"`
		} `toml:"hook"`
	}
	md, err := toml.NewDecoder(r).Decode(&file)
	if err != nil {
		return nil, fmt.Errorf("events.hooks_file %s: %w", path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return nil, fmt.Errorf("events.hooks_file %s: unknown key %s (expected [[hook]] tables with name, scheme, secret and principal)", path, undecoded[0])
	}
	var errs []error
	hooks := map[string]Hook{}
	for i, h := range file.Hook {
		field := fmt.Sprintf("events.hooks_file %s: hook[%d]", path, i)
		if rule := checkName(h.Name); rule != "" {
			errs = append(errs, fmt.Errorf("%s.name: %s", field, rule))
		}
		if _, dup := hooks[h.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: hook %q is listed twice", field, h.Name))
		}
		if h.Scheme != SchemeGitHub && h.Scheme != SchemeGitLab {
			errs = append(errs, fmt.Errorf("%s.scheme: must be %q or %q (got %q)", field, SchemeGitHub, SchemeGitLab, h.Scheme))
		}
		if len(h.Secret) < minSecretLen {
			errs = append(errs, fmt.Errorf("%s.secret: must be at least %d characters (a random string, e.g. `openssl rand -hex 32`)", field, minSecretLen))
		}
		hooks[h.Name] = Hook{Name: h.Name, Scheme: h.Scheme, Principal: h.Principal, secret: []byte(h.Secret)}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return hooks, nil
}

// Signed reports whether a request carries a hook signature (of either
// scheme): such a request is judged by its hook's secret alone.
func Signed(h http.Header) bool {
	return h.Get(HeaderGitHubSignature) != "" || h.Get(HeaderGitLabToken) != ""
}

// ErrUnknownHook: no hook of the name is configured.
var ErrUnknownHook = errors.New("no hook of that name is configured")

// ErrBadSignature: the request's signature is missing, malformed or wrong.
var ErrBadSignature = errors.New("the signature does not match the hook's secret")

// Verify checks a delivery to hook name, with its headers and its raw
// body, and returns the hook. A nil Set knows no hook.
func (s *Set) Verify(name string, h http.Header, body []byte) (Hook, error) {
	if s == nil {
		return Hook{}, ErrUnknownHook
	}
	s.maybeReload()
	s.mu.Lock()
	hook, ok := s.hooks[name]
	s.mu.Unlock()
	if !ok {
		return Hook{}, ErrUnknownHook
	}
	switch hook.Scheme {
	case SchemeGitHub:
		sig, found := strings.CutPrefix(h.Get(HeaderGitHubSignature), "sha256=")
		got, err := hex.DecodeString(sig)
		if !found || err != nil {
			return Hook{}, fmt.Errorf("%w: hook %s takes %s: sha256=<hex HMAC-SHA256 of the body>", ErrBadSignature, name, HeaderGitHubSignature)
		}
		mac := hmac.New(sha256.New, hook.secret)
		mac.Write(body)
		if !hmac.Equal(got, mac.Sum(nil)) {
			return Hook{}, fmt.Errorf("%w (%s)", ErrBadSignature, HeaderGitHubSignature)
		}
	case SchemeGitLab:
		token := h.Get(HeaderGitLabToken)
		if token == "" {
			return Hook{}, fmt.Errorf("%w: hook %s takes %s", ErrBadSignature, name, HeaderGitLabToken)
		}
		want := sha256.Sum256(hook.secret)
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
			return Hook{}, fmt.Errorf("%w (%s)", ErrBadSignature, HeaderGitLabToken)
		}
	}
	return hook, nil
}

// maybeReload reads the file again when it changed, at most once a
// second. A file that no longer parses keeps the hooks read before; a file
// removed removes them all (removing it revokes every secret). Each new
// failure is reported once.
func (s *Set) maybeReload() {
	s.mu.Lock()
	if time.Since(s.checked) < statEvery {
		s.mu.Unlock()
		return
	}
	s.checked = time.Now()
	modTime, size, check := s.modTime, s.size, s.check
	s.mu.Unlock()
	st, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.mu.Lock()
		s.hooks, s.modTime, s.size = nil, time.Time{}, 0
		s.mu.Unlock()
		s.report(fmt.Errorf("events.hooks_file %s is gone: every hook is off until it is back", s.path))
		return
	case err == nil && st.ModTime().Equal(modTime) && st.Size() == size:
		return
	case err == nil:
		err = s.reload(check)
	}
	if err != nil {
		s.report(fmt.Errorf("%w; the hooks read before stay in force", err))
		return
	}
	s.report(nil)
}

// report tells onError of a failure unlike the last one told.
func (s *Set) report(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	s.mu.Lock()
	same := msg == s.lastError
	s.lastError = msg
	s.mu.Unlock()
	if err != nil && !same && s.onError != nil {
		s.onError(err)
	}
}

// DeliveryID is the ID of a delivery to hook (the zero Hook: an unsigned
// delivery) with headers h and body. A delivery signed with an HMAC of its
// body (GitHub's scheme) is named by a hash of that body: the signature
// covers the body alone, so whoever captured one delivery could replay it
// under another delivery header, and GitHub's own redelivery sends the same
// body. Any other delivery is named by the header CI systems send
// (X-GitHub-Delivery, GitLab's X-Gitlab-Event-UUID) or a generic
// Idempotency-Key, or "" when none is sent.
func DeliveryID(hook Hook, h http.Header, body []byte) string {
	if hook.Scheme == SchemeGitHub {
		sum := sha256.Sum256(body)
		return "sha256:" + hex.EncodeToString(sum[:16])
	}
	return headerDeliveryID(h)
}

// headerDeliveryID is the delivery ID a request's headers name, or "".
func headerDeliveryID(h http.Header) string {
	for _, name := range []string{"X-GitHub-Delivery", "X-Gitlab-Event-UUID", "Idempotency-Key"} {
		if v := h.Get(name); v != "" {
			return v
		}
	}
	return ""
}

// Ping reports whether the delivery is GitHub's ping (sent when a webhook
// is created), which posts nothing.
func Ping(h http.Header) bool { return h.Get("X-GitHub-Event") == "ping" }
