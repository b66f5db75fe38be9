package waits

import (
	"strings"

	"github.com/durawait/durawait/workflows"
)

// The search attributes durawait's workflows carry (workflows/searchattrs.go)
// that the operator command filters on and shows.
const (
	AttrTool      = workflows.SearchAttrTool
	AttrState     = workflows.SearchAttrState
	AttrProbeTool = workflows.SearchAttrProbeTool
	AttrCaller    = workflows.SearchAttrCaller
	AttrClient    = workflows.SearchAttrClient
	AttrSession   = workflows.SearchAttrSession
	AttrTarget    = workflows.SearchAttrTarget
)

// toolOfID is the tool a workflow ID belongs to, from its prefix ("" when
// it is none of durawait's): the tool of a wait the previous release
// started, which carries no search attributes.
func toolOfID(id string) string {
	if tool := workflows.ToolOfWorkflowID(id); tool != "" {
		return tool
	}
	switch {
	case strings.HasPrefix(id, workflows.DownstreamCallIDPrefix):
		return "call"
	case strings.HasPrefix(id, workflows.CatalogIDPrefix), strings.HasPrefix(id, workflows.HostLeaseIDPrefix):
		return "internal"
	}
	return ""
}
