package config

import (
	"fmt"
	"strings"
)

// InheritEnv is an mcp_servers entry's or an agent provider's inherit_env:
// true (all of durawait's environment), false (the default: a minimal
// one), or a list of variable names to pass.
type InheritEnv struct {
	All   bool
	Names []string
	// set says the config file set it (a provider's then replaces its
	// preset's).
	set bool
}

// UnmarshalTOML implements toml.Unmarshaler: a boolean or an array of names.
func (e *InheritEnv) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case bool:
		*e = InheritEnv{All: v, set: true}
		return nil
	case []any:
		names := make([]string, 0, len(v))
		for i, n := range v {
			s, ok := n.(string)
			if !ok || s == "" || strings.ContainsAny(s, "= \x00") {
				return fmt.Errorf("inherit_env[%d]: must be an environment variable name, got %#v", i, n)
			}
			names = append(names, s)
		}
		*e = InheritEnv{Names: names, set: true}
		return nil
	}
	return fmt.Errorf("inherit_env: must be true, false or a list of variable names, got %#v", v)
}
