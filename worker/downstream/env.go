package downstream

import "github.com/durawait/durawait/internal/childenv"

// BaseEnvNames are the variables every stdio server gets from durawait's
// environment, when set (childenv.BaseNames).
var BaseEnvNames = childenv.BaseNames

// Inherit says which more of durawait's environment a stdio server gets.
type Inherit = childenv.Inherit

// ServerEnv assembles a stdio server's environment from durawait's
// (parent, as os.Environ returns it): the base variables, those inherit
// names, then the server's configured env, which wins (childenv.Build).
func ServerEnv(parent []string, inherit Inherit, env map[string]string) []string {
	return childenv.Build(parent, inherit, env)
}
