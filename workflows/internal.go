package workflows

import "strings"

// InternalTypePrefix begins the workflow type of each of durawait's own
// workflows (the catalogs and the host leases, which are not waits): an
// operator's query tells them from the waits by type as well as by
// DurawaitTool = "internal".
const InternalTypePrefix = "durawait.internal."

// The types of durawait's own workflows before InternalTypePrefix: a run
// an earlier release started still runs under its type (a lease runs for
// as long as its host exists), so workers still register these, and the
// run continues as new under its type of now.
const (
	LegacyCatalogWorkflowName   = "DownstreamCatalog"
	LegacyHostLeaseWorkflowName = "HostLease"
)

// InternalWorkflowTypes are every workflow type of durawait's own
// workflows, of now and of earlier releases.
func InternalWorkflowTypes() []string {
	return []string{CatalogWorkflowName, HostLeaseWorkflowName, LegacyCatalogWorkflowName, LegacyHostLeaseWorkflowName}
}

// quotedList is names as a visibility query's list: 'a', 'b'.
func quotedList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	return strings.Join(quoted, ", ")
}
