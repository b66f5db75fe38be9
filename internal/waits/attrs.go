package waits

import enumspb "go.temporal.io/api/enums/v1"

// The search attributes durawait's workflows carry (all Keyword). They are
// named here, in one place, until the workflows package defines them
// (workflows/searchattrs.go); then these become those constants.
const (
	AttrTool      = "DurawaitTool"
	AttrState     = "DurawaitState"
	AttrProbeTool = "DurawaitProbeTool"
	AttrCaller    = "DurawaitCaller"
	AttrClient    = "DurawaitClient"
	AttrSession   = "DurawaitSession"
)

// SearchAttributes are the attributes above with their types, as the
// embedded engine's option (engine.Options.SearchAttributes) takes them.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	out := map[string]enumspb.IndexedValueType{}
	for _, name := range []string{AttrTool, AttrState, AttrProbeTool, AttrCaller, AttrClient, AttrSession} {
		out[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return out
}

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
