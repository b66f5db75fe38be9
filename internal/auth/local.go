package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LocalTokenFile is the name, in the data dir, of the local token.
const LocalTokenFile = "local.token"

// LocalToken is a random token that the process owning a data dir writes
// there (mode 0600) when its HTTP listener authenticates: with [auth], and
// always for the stdio daemon. Whoever can read the data dir is the local
// user; the stdio bridge presents this token, and its
// caller is the Local principal.
type LocalToken struct{ token string }

// WriteLocalToken makes a new local token and writes it to dataDir.
func WriteLocalToken(dataDir string) (*LocalToken, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("make the local token: %w", err)
	}
	token := hex.EncodeToString(b)
	path := filepath.Join(dataDir, LocalTokenFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(token+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write the local token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write the local token: %w", err)
	}
	return &LocalToken{token: token}, nil
}

// ReadLocalToken reads the local token of dataDir; "" when there is none
// (a serve without [auth], or none runs).
func ReadLocalToken(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, LocalTokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// RemoveLocalToken removes the local token of dataDir, if any.
func RemoveLocalToken(dataDir string) {
	_ = os.Remove(filepath.Join(dataDir, LocalTokenFile))
}

// Verify implements Verifier: the local token is the Local principal.
func (l *LocalToken) Verify(_ context.Context, token string) (string, error) {
	if subtle.ConstantTimeCompare([]byte(token), []byte(l.token)) == 1 {
		return Local, nil
	}
	return "", errUnknownToken()
}
