package auth

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestComposeTokensFileLoads: deploy/compose's front end starts with this
// tokens file, and deploy/compose/README.md tells callers its demo token.
// Its content is read from a private copy: a checkout's modes follow the
// umask (TestTokensFileMode covers them).
func TestComposeTokensFileLoads(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "..", "deploy", "compose", "durawait", "tokens.toml"))
	require.NoError(t, err)
	tokens, err := LoadTokens(writeTokens(t, string(body)), func(err error) { t.Error(err) })
	require.NoError(t, err)
	principal, err := tokens.Verify(context.Background(), "durawait-compose-demo-token-change-me")
	require.NoError(t, err)
	assert.Equal(t, "demo", principal)
}
