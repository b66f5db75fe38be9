package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// minTokenLen is the shortest token a tokens file may hold.
const minTokenLen = 16

// statEvery bounds how often Tokens looks at its file for changes.
const statEvery = time.Second

// Tokens verifies bearer tokens listed in a TOML file:
//
//	[[token]]
//	principal = "alice"
//	token = "a long random string"
//
// Each token names one principal; a principal may have several tokens. The
// file is read again when it changes (its size or modification time, looked
// at no more than once a second) and on Reload (SIGHUP); a file that no
// longer parses, or that every user may change (mode o+w), keeps the tokens
// read before, and the error is returned by Reload; Warning says when every
// user may read it. Tokens are compared in constant time, against every entry.
type Tokens struct {
	path string

	mu      sync.Mutex
	entries []tokenEntry
	modTime time.Time
	size    int64
	checked time.Time
	// readable is the mode of the file when every user of the machine may
	// read it (Warning), else 0.
	readable fs.FileMode
	// onError reports a failed automatic reload.
	onError func(error)
}

type tokenEntry struct {
	principal string
	digest    [sha256.Size]byte
}

// LoadTokens reads a tokens file. onError, when not nil, receives the error
// of an automatic reload that failed (the old tokens stay in force).
func LoadTokens(path string, onError func(error)) (*Tokens, error) {
	t := &Tokens{path: path, onError: onError}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the file again; on error the tokens read before stay.
func (t *Tokens) Reload() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reloadLocked()
}

func (t *Tokens) reloadLocked() error {
	t.checked = time.Now()
	st, err := os.Stat(t.path)
	if err != nil {
		return fmt.Errorf("auth.tokens_file: %w", err)
	}
	perm := st.Mode().Perm()
	if perm&0o002 != 0 {
		return fmt.Errorf("auth.tokens_file %s: mode %04o lets every user of the machine change it, and so add a token of their own: "+
			"chmod 600 it (640 or 440 for a group the service runs in)", t.path, perm)
	}
	entries, err := parseTokens(t.path)
	if err != nil {
		return err
	}
	t.entries, t.modTime, t.size = entries, st.ModTime(), st.Size()
	t.readable = 0
	if perm&0o004 != 0 {
		t.readable = perm
	}
	return nil
}

// Warning says what is wrong with the file's mode short of refusing it, ""
// when nothing is: a file every user may read gives its tokens to every
// user of the machine. (A file every user may change is refused.) Group
// bits pass: a Kubernetes Secret mounted for the pod's fsGroup is 0440.
func (t *Tokens) Warning() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.readable == 0 {
		return ""
	}
	return fmt.Sprintf("auth.tokens_file %s: mode %04o lets every user of the machine read its tokens: chmod 600 it (640 or 440 for a group the service runs in)",
		t.path, t.readable)
}

func parseTokens(path string) ([]tokenEntry, error) {
	var file struct {
		Token []struct {
			Principal string `toml:"principal"`
			Token     string `toml:"token"`
		} `toml:"token"`
	}
	md, err := toml.DecodeFile(path, &file)
	if err != nil {
		return nil, fmt.Errorf("auth.tokens_file %s: %w", path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return nil, fmt.Errorf("auth.tokens_file %s: unknown key %s (expected [[token]] tables with principal and token)", path, undecoded[0])
	}
	var errs []error
	seen := map[[sha256.Size]byte]bool{}
	entries := make([]tokenEntry, 0, len(file.Token))
	for i, e := range file.Token {
		field := fmt.Sprintf("auth.tokens_file %s: token[%d]", path, i)
		reserved := reservedPrincipal(e.Principal)
		switch {
		case e.Principal == "":
			errs = append(errs, fmt.Errorf("%s.principal: must not be empty", field))
		case reserved != "":
			errs = append(errs, fmt.Errorf("%s.principal: %s", field, reserved))
		case len(e.Token) < minTokenLen:
			errs = append(errs, fmt.Errorf("%s.token: must be at least %d characters (a random string, e.g. `openssl rand -hex 32`)", field, minTokenLen))
		}
		d := sha256.Sum256([]byte(e.Token))
		if seen[d] {
			errs = append(errs, fmt.Errorf("%s.token: the same token is listed twice", field))
		}
		seen[d] = true
		entries = append(entries, tokenEntry{principal: e.Principal, digest: d})
	}
	if len(file.Token) == 0 {
		errs = append(errs, fmt.Errorf("auth.tokens_file %s: lists no [[token]]", path))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return entries, nil
}

// Verify implements Verifier.
func (t *Tokens) Verify(_ context.Context, token string) (string, error) {
	entries := t.current()
	d := sha256.Sum256([]byte(token))
	// Compare digests (fixed length) with every entry, so neither the
	// token's length nor its position in the file shows in the timing.
	principal, found := "", 0
	for _, e := range entries {
		eq := subtle.ConstantTimeCompare(d[:], e.digest[:])
		if eq == 1 {
			principal = e.principal
		}
		found |= eq
	}
	if found == 0 {
		return "", errUnknownToken()
	}
	return principal, nil
}

// current returns the entries, reading the file again when it changed.
func (t *Tokens) current() []tokenEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.checked) >= statEvery {
		t.checked = time.Now()
		if st, err := os.Stat(t.path); err == nil && (!st.ModTime().Equal(t.modTime) || st.Size() != t.size) {
			if err := t.reloadLocked(); err != nil && t.onError != nil {
				t.onError(err)
			}
		}
	}
	return t.entries
}
