package downstream

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// ProgressFunc receives one progress notification a downstream server sent
// for a forwarded call. Its ProgressToken is durawait's own token for the
// call, not the caller's.
type ProgressFunc func(mcp.ProgressNotificationParams)

// progressRoutes maps the progress tokens durawait sends on forwarded calls
// to the callbacks of those calls.
type progressRoutes struct {
	next   atomic.Uint64
	routes sync.Map // token string -> ProgressFunc
}

// add registers fn under a new token; remove ends the route.
func (p *progressRoutes) add(server string, fn ProgressFunc) (token string, remove func()) {
	token = fmt.Sprintf("durawait-%s-%d", server, p.next.Add(1))
	p.routes.Store(token, fn)
	return token, func() { p.routes.Delete(token) }
}

// deliver routes a notifications/progress to its call; other notifications
// and unknown tokens are ignored.
func (p *progressRoutes) deliver(n mcp.JSONRPCNotification) {
	if n.Method != "notifications/progress" {
		return
	}
	fields := n.Params.AdditionalFields
	token, ok := fields["progressToken"].(string)
	if !ok {
		return
	}
	fn, ok := p.routes.Load(token)
	if !ok {
		return
	}
	params := mcp.ProgressNotificationParams{ProgressToken: token}
	params.Progress, _ = fields["progress"].(float64)
	params.Total, _ = fields["total"].(float64)
	params.Message, _ = fields["message"].(string)
	fn.(ProgressFunc)(params)
}
