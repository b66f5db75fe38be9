package downstream

import (
	"slices"
	"sort"
	"strings"
)

// BaseEnvNames are the variables every stdio server gets from durawait's
// environment, when set: enough to find programs, a home and a locale, and
// nothing that could be a secret. LC_* matches every locale category.
var BaseEnvNames = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TMPDIR", "TZ"}

// Inherit says which more of durawait's environment a stdio server gets.
type Inherit struct {
	// All passes durawait's whole environment.
	All bool
	// Names are passed too; a name ending in '*' matches a prefix.
	Names []string
}

// ServerEnv assembles a stdio server's environment from durawait's
// (parent, as os.Environ returns it): the base variables, those inherit
// names, then the server's configured env, which wins. The result is sorted
// and has one entry per name.
func ServerEnv(parent []string, inherit Inherit, env map[string]string) []string {
	vars := map[string]string{}
	for _, kv := range parent {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if inherit.All || matchAny(name, BaseEnvNames) || matchAny(name, inherit.Names) {
			vars[name] = value
		}
	}
	for k, v := range env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func matchAny(name string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			return strings.HasPrefix(name, prefix)
		}
		return name == p
	})
}
