package waits

import "github.com/durawait/durawait/workflows"

// The search attributes durawait's workflows carry (workflows/searchattrs.go)
// that the operator command filters on and shows.
const (
	AttrTool      = workflows.SearchAttrTool
	AttrState     = workflows.SearchAttrState
	AttrProbeTool = workflows.SearchAttrProbeTool
	AttrCaller    = workflows.SearchAttrCaller
	AttrClient    = workflows.SearchAttrClient
	AttrSession   = workflows.SearchAttrSession
)

// idPrefixes maps a tool to the prefix of its workflow IDs (see
// workflows/ids.go): the fallback of --tool on a namespace where
// AttrTool is not registered. Re-exposed tools run as call/… workflows
// only from a front end without a worker in its process.
var idPrefixes = map[string]string{
	"wait_for":      "wait_for/",
	"wait_for_text": "wait_for_text/",
	"start_agent":   "agent/",
	"wait_agent":    "agent/",
	"list_panes":    "list_panes/",
}

// toolOfID is the tool a workflow ID belongs to, from its prefix ("" when
// it is none of durawait's).
func toolOfID(id string) string {
	switch {
	case hasPrefix(id, "wait_for_text/"):
		return "wait_for_text"
	case hasPrefix(id, "wait_for/"):
		return "wait_for"
	case hasPrefix(id, "agent/"):
		return "start_agent"
	case hasPrefix(id, "list_panes/"):
		return "list_panes"
	case hasPrefix(id, "call/"):
		return "call"
	case hasPrefix(id, "durawait-catalog/"):
		return "internal"
	}
	return ""
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
