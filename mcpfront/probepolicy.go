package mcpfront

import "github.com/durawait/durawait/internal/probepolicy"

// ProbeAllTools in a server's probe tools allows every tool of the server as
// a probe, read-only or not.
const ProbeAllTools = probepolicy.AllTools

// probePolicy says which downstream tools wait_for may probe beyond the
// read-only ones (internal/probepolicy); the worker checks it again.
type probePolicy = probepolicy.Policy
