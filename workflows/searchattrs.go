package workflows

import (
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Search attributes: what makes every wait findable in the Temporal UI and
// through the visibility API (e.g. `DurawaitTool = "wait_for" AND
// DurawaitState = "running"`). All are Keyword. They must be registered on
// the namespace before any workflow upserts them (an unregistered one stalls
// every workflow task): durawait registers them at boot on the embedded
// engine and checks them on a cluster (docs/temporal-ui.md).
const (
	// SearchAttrTool is the tool that started the workflow: wait_for,
	// wait_for_text, start_agent, or for short internal workflows the tool
	// re-exposed (a downstream call), list_panes or "internal" (the catalog).
	SearchAttrTool = "DurawaitTool"
	// SearchAttrState is where the wait is: one of the WaitState values.
	SearchAttrState = "DurawaitState"
	// SearchAttrProbeTool is wait_for's probe.tool.
	SearchAttrProbeTool = "DurawaitProbeTool"
	// SearchAttrCaller is the caller's principal; CallerAnonymous when
	// authentication is off (or on stdio).
	SearchAttrCaller = "DurawaitCaller"
	// SearchAttrClient is the MCP client's name/version from initialize.
	SearchAttrClient = "DurawaitClient"
	// SearchAttrSession is the MCP session ID, when there is one.
	SearchAttrSession = "DurawaitSession"
	// SearchAttrAgentProvider is an agent invocation's provider.
	SearchAttrAgentProvider = "DurawaitAgentProvider"
	// SearchAttrAgentStatus is an agent invocation's status (AgentStatus:
	// running, succeeded, failed, blocked, cancelled).
	SearchAttrAgentStatus = "DurawaitAgentStatus"
	// SearchAttrHost is the host whose queue runs the wait's loop (see
	// HostLease): its holder finds the wait by it after a restart or a
	// move. A host's lease workflow carries its host's name too.
	SearchAttrHost = "DurawaitHost"
	// SearchAttrTarget is what the wait waits for, in one short line (see
	// WaitForTarget, TextWaitTarget, AgentTarget): the column an operator
	// adds to the Temporal UI's list.
	SearchAttrTarget = "DurawaitTarget"
)

// SearchAttributes lists every search attribute durawait upserts, with its
// type: what a namespace must have registered.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	out := map[string]enumspb.IndexedValueType{}
	for _, name := range SearchAttributeNames {
		out[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return out
}

// SearchAttributeNames are the search attributes in the order docs and
// messages list them. They are ten, all Keyword: the most a namespace on a
// SQL visibility store (the embedded engine's SQLite, PostgreSQL, MySQL)
// may have (docs/temporal-ui.md); a wait_for_text's pane is its target's
// start (`DurawaitTarget STARTS_WITH "tmux pane %3 "`).
var SearchAttributeNames = []string{
	SearchAttrTool, SearchAttrState, SearchAttrProbeTool, SearchAttrCaller, SearchAttrClient,
	SearchAttrSession, SearchAttrAgentProvider, SearchAttrAgentStatus, SearchAttrHost, SearchAttrTarget,
}

// RetiredSearchAttributes are attributes earlier commits set and durawait
// no longer does: the embedded engine's namespace drops them, freeing
// their Keyword column (DurawaitPane: a wait_for_text's pane starts its
// DurawaitTarget).
var RetiredSearchAttributes = []string{"DurawaitPane"}

// The typed keys of the search attributes.
var (
	KeyTool          = temporal.NewSearchAttributeKeyKeyword(SearchAttrTool)
	KeyState         = temporal.NewSearchAttributeKeyKeyword(SearchAttrState)
	KeyProbeTool     = temporal.NewSearchAttributeKeyKeyword(SearchAttrProbeTool)
	KeyCaller        = temporal.NewSearchAttributeKeyKeyword(SearchAttrCaller)
	KeyClient        = temporal.NewSearchAttributeKeyKeyword(SearchAttrClient)
	KeySession       = temporal.NewSearchAttributeKeyKeyword(SearchAttrSession)
	KeyAgentProvider = temporal.NewSearchAttributeKeyKeyword(SearchAttrAgentProvider)
	KeyAgentStatus   = temporal.NewSearchAttributeKeyKeyword(SearchAttrAgentStatus)
	KeyHost          = temporal.NewSearchAttributeKeyKeyword(SearchAttrHost)
	KeyTarget        = temporal.NewSearchAttributeKeyKeyword(SearchAttrTarget)
)

// WaitState is the value of SearchAttrState.
type WaitState string

// The states of a wait, as SearchAttrState shows them.
const (
	// StateRunning: the wait (or agent run) is under way.
	StateRunning WaitState = "running"
	// StateMatched: wait_for's condition (matches / not_matches) held, or
	// wait_for_text found its text, or an agent succeeded, or a post ended
	// a wait_for_event.
	StateMatched WaitState = "matched"
	// StateSettled: wait_for's output stayed unchanged for quiet_for_sec.
	StateSettled WaitState = "settled"
	// StateTimeout: the wait reached its bound without its condition.
	StateTimeout WaitState = "timeout"
	// StateFailed: wait_for's fail_matches matched, or an agent failed or
	// was blocked.
	StateFailed WaitState = "failed"
	// StateCancelled: an operator (or the caller, for an agent) cancelled it.
	StateCancelled WaitState = "cancelled"
	// StateError: the wait ended without a result (the probe failed, the
	// pane died, no worker ran it).
	StateError WaitState = "error"
	// StateExpired: an event's latch ended, keeping no post (its posts
	// outlived the retention) and holding no wait.
	StateExpired WaitState = "expired"
)

// CallerAnonymous is SearchAttrCaller when the caller has no principal
// (authentication off, or stdio: the local user). It is auth.LocalName,
// which no configured principal may take.
const CallerAnonymous = "anonymous"

// CallerValue is SearchAttrCaller's value for principal.
func CallerValue(principal string) string {
	if principal == "" {
		return CallerAnonymous
	}
	return principal
}

// maxKeywordBytes caps a Keyword value. Temporal itself takes more, but
// the SQL visibility stores (MySQL 8, PostgreSQL) keep a custom Keyword
// attribute in a VARCHAR(255) generated column: a longer value (a client's
// name/version, a caller's principal) would fail the visibility write on
// such a cluster. 255 bytes are at most 255 characters.
const maxKeywordBytes = 255

// KeywordValue cuts s to what a Keyword search attribute takes on every
// visibility store (maxKeywordBytes), on a rune boundary.
func KeywordValue(s string) string { return TruncateUTF8(s, maxKeywordBytes) }

// TruncateUTF8 cuts s to at most max bytes without splitting a rune; a cut
// string ends with "…" (within max).
func TruncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if max < len(ellipsis) {
		return s[:cut]
	}
	return s[:cut] + ellipsis
}

// StartedRunning is the search attribute a front starts a wait with, so
// the wait shows as running from its first moment without an upsert of its
// own (one visibility write and one history event less per wait).
func StartedRunning() temporal.SearchAttributeUpdate {
	return KeyState.ValueSet(string(StateRunning))
}

// markRunning upserts DurawaitState: running unless the wait was started
// with it (StartedRunning).
func markRunning(ctx workflow.Context) {
	if state, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(KeyState); ok && state == string(StateRunning) {
		return
	}
	setState(ctx, StateRunning)
}

// setState upserts the wait's state and any more updates, also on a
// cancelled ctx (a cancelled wait records that it was). An upsert refused
// by the SDK is a bug of durawait (a wrong type); it is logged, not fatal
// to the wait.
func setState(ctx workflow.Context, state WaitState, more ...temporal.SearchAttributeUpdate) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	updates := append([]temporal.SearchAttributeUpdate{KeyState.ValueSet(string(state))}, more...)
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Error("upsert search attributes", "error", err)
	}
}
