package config

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryDeployConfigLoads loads each durawait config that deploy/ ships
// (the examples, the compose and Kubernetes roles' files) the way durawait
// does, so a renamed or removed key fails here rather than at a container's
// start. Unknown keys are errors (Load), and a config that listens off
// loopback must set up authentication (CheckMCPAuth), as a front's must.
// The tokens files beside them are another format (docs/auth.md).
func TestEveryDeployConfigLoads(t *testing.T) {
	root := filepath.Join("..", "..", "deploy")
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".toml") && d.Name() != "tokens.toml" {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	// The examples, compose's front and worker, and Kubernetes' front and worker.
	require.GreaterOrEqual(t, len(files), 6, "deploy configs found: %v", files)

	for _, path := range files {
		t.Run(strings.TrimPrefix(filepath.ToSlash(path), "../../"), func(t *testing.T) {
			cfg, err := Load(path)
			require.NoError(t, err)
			assert.NoError(t, cfg.Validate())
			if strings.Contains(path, "front") {
				assert.NoError(t, cfg.CheckMCPAuth())
				assert.True(t, cfg.Auth.Enabled(), "a front end's config sets up authentication")
			}
		})
	}
}
