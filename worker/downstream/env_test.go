package downstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServerEnvIsMinimalUnlessInherited(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin", "HOME=/home/u", "USER=u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/u", "TZ=UTC",
		"AWS_SECRET_ACCESS_KEY=s3cr3t", "GITHUB_TOKEN=ghp", "DURAWAIT_X=1", "NOEQUALS", "=bad",
	}
	assert.Equal(t, []string{
		"HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "PATH=/usr/bin", "TMPDIR=/tmp/u", "TZ=UTC", "USER=u",
	}, ServerEnv(parent, Inherit{}, nil), "secrets stay in durawait's environment")

	assert.Equal(t, []string{
		"GITHUB_TOKEN=ghp", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "PATH=/opt/bin", "TMPDIR=/tmp/u", "TZ=UTC", "USER=u", "X=y",
	}, ServerEnv(parent, Inherit{Names: []string{"GITHUB_TOKEN", "MISSING"}}, map[string]string{"PATH": "/opt/bin", "X": "y"}),
		"named variables pass, and the configured env wins")

	assert.Contains(t, ServerEnv(parent, Inherit{Names: []string{"DURAWAIT_*"}}, nil), "DURAWAIT_X=1", "a trailing * matches a prefix")
	all := ServerEnv(parent, Inherit{All: true}, nil)
	assert.Contains(t, all, "AWS_SECRET_ACCESS_KEY=s3cr3t")
	assert.Len(t, all, 10)
}
