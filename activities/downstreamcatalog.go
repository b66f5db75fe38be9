package activities

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/durawait/durawait/workflows"
)

// Catalog snapshots the worker's downstream servers, their tools (each as
// its server listed it, raw schemas kept), the probe policy and the tmux
// host queue: what the front ends build their tool lists from.
func (d *Downstream) Catalog(context.Context) (workflows.DownstreamCatalog, error) {
	cat := workflows.DownstreamCatalog{Servers: []workflows.DownstreamServer{}, TmuxHostQueue: d.TmuxHostQueue}
	for _, name := range d.Servers.ServerNames() {
		tools, expose, lastErr := d.Servers.ServerTools(name)
		s := workflows.DownstreamServer{Name: name, Expose: expose, ProbeTools: d.ProbeTools[name], Tools: []json.RawMessage{}}
		if lastErr != nil {
			s.Error = lastErr.Error()
		}
		for _, t := range tools {
			raw, err := json.Marshal(t)
			if err != nil {
				return workflows.DownstreamCatalog{}, fmt.Errorf("encode tool %q of downstream MCP server %q: %w", t.Name, name, err)
			}
			s.Tools = append(s.Tools, raw)
		}
		cat.Servers = append(cat.Servers, s)
	}
	return cat, nil
}
