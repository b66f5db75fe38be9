package auth

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestComposeTokensFileLoads: deploy/compose's front end starts with this
// tokens file, and deploy/compose/README.md tells callers its demo token.
func TestComposeTokensFileLoads(t *testing.T) {
	tokens, err := LoadTokens(filepath.Join("..", "..", "deploy", "compose", "durawait", "tokens.toml"), func(err error) { t.Error(err) })
	require.NoError(t, err)
	principal, err := tokens.Verify(context.Background(), "durawait-compose-demo-token-change-me")
	require.NoError(t, err)
	assert.Equal(t, "demo", principal)
}
