// Package namespace prepares the Temporal namespace durawait runs in: its
// search attributes (registered on the embedded engine, checked on a
// cluster) and, on the embedded engine, the retention of closed waits.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Services are the Temporal services Prepare uses: a client's
// OperatorService() and WorkflowService().
type Services struct {
	Operator operatorservice.OperatorServiceClient
	Workflow workflowservice.WorkflowServiceClient
}

// ErrMissingSearchAttributes is returned (wrapped, with the commands that
// create them) when a cluster's namespace lacks search attributes.
var ErrMissingSearchAttributes = errors.New("the namespace lacks durawait's search attributes")

// ErrSearchAttributeTypes is returned (wrapped, naming each) when a
// namespace has registered a search attribute of durawait's with another
// type: creating it again fails ("already exists"), and a type cannot be
// changed in place.
var ErrSearchAttributeTypes = errors.New("the namespace has durawait's search attributes registered with another type")

// Gap is how a namespace's search attributes differ from what durawait
// upserts.
type Gap struct {
	// Missing are not registered at all, in names order.
	Missing []string
	// WrongType are registered with another type, in names order, as
	// "<name> is registered as <type>, want <type>".
	WrongType []string
}

// Check compares namespace ns's custom search attributes with want. It
// needs the operator API (ListSearchAttributes).
func Check(ctx context.Context, op operatorservice.OperatorServiceClient, ns string, want map[string]enumspb.IndexedValueType, names []string) (Gap, error) {
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return Gap{}, fmt.Errorf("list the search attributes of namespace %q: %w", ns, err)
	}
	have := resp.GetCustomAttributes()
	var g Gap
	for _, name := range names {
		t, ok := have[name]
		switch {
		case !ok:
			g.Missing = append(g.Missing, name)
		case t != want[name]:
			g.WrongType = append(g.WrongType, fmt.Sprintf("%s is registered as %s, want %s", name, typeName(t), typeName(want[name])))
		}
	}
	return g, nil
}

// wrongTypeError explains search attributes registered with another type.
func wrongTypeError(ns string, wrong []string) error {
	return fmt.Errorf("%w: %s; remove each from namespace %q (temporal operator search-attribute remove) and start durawait again, or use another namespace",
		ErrSearchAttributeTypes, strings.Join(wrong, "; "), ns)
}

// Missing lists the search attributes of want that namespace ns has not
// registered (or has with another type), in names order.
func Missing(ctx context.Context, op operatorservice.OperatorServiceClient, ns string, want map[string]enumspb.IndexedValueType, names []string) ([]string, error) {
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("list the search attributes of namespace %q: %w", ns, err)
	}
	have := resp.GetCustomAttributes()
	var missing []string
	for _, name := range names {
		if t, ok := have[name]; !ok || t != want[name] {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// CreateLines are the Temporal CLI commands that create the missing search
// attributes on namespace ns, one a line; connect (the CLI's connection
// flags, see ClusterCheck) ends each line when set.
func CreateLines(ns string, missing []string, want map[string]enumspb.IndexedValueType, connect string) string {
	var b strings.Builder
	for _, name := range missing {
		fmt.Fprintf(&b, "temporal operator search-attribute create --namespace %s --name %s --type %s%s\n",
			ns, name, typeName(want[name]), suffix(connect))
	}
	return b.String()
}

// suffix is " "+s, or "" for an empty s.
func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

// typeName is a search attribute type as the Temporal CLI spells it.
func typeName(t enumspb.IndexedValueType) string {
	name := strings.TrimPrefix(t.String(), "INDEXED_VALUE_TYPE_")
	if name == "" {
		return "Keyword"
	}
	// KEYWORD_LIST -> KeywordList, DATETIME -> Datetime.
	var b strings.Builder
	for _, part := range strings.Split(strings.ToLower(name), "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// ErrNamespaceNotFound is returned (wrapped, with the commands that create
// it and durawait's search attributes in it) when a cluster has no such
// namespace.
var ErrNamespaceNotFound = errors.New("the namespace does not exist")

// ClusterCheck says what a cluster's namespace must have.
type ClusterCheck struct {
	Namespace        string
	SearchAttributes map[string]enumspb.IndexedValueType
	// Names lists SearchAttributes' names in order.
	Names []string
	// Connect are the Temporal CLI's flags that connect it as durawait is
	// connected (--address, --tls-*), appended to each printed command.
	Connect string
	// Retention is suggested in the namespace's create command.
	Retention time.Duration
}

// CheckCluster refuses to go on when the cluster lacks what durawait
// needs, printing the exact Temporal CLI commands that create it:
// ErrNamespaceNotFound when the namespace does not exist,
// ErrMissingSearchAttributes when it lacks search attributes (a workflow
// that upserts an unregistered one stalls, so durawait does not start
// rather than stall), ErrSearchAttributeTypes for one registered with
// another type (its create line would fail). It changes nothing on the
// cluster; it needs DescribeNamespace and the operator API
// (ListSearchAttributes).
func CheckCluster(ctx context.Context, s Services, c ClusterCheck) error {
	if _, err := s.Workflow.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: c.Namespace}); err != nil {
		var notFound *serviceerror.NamespaceNotFound
		if !errors.As(err, &notFound) {
			return fmt.Errorf("describe namespace %q: %w", c.Namespace, err)
		}
		retention := c.Retention
		if retention <= 0 {
			retention = 24 * time.Hour
		}
		return fmt.Errorf("%w: %q; create it and durawait's search attributes in it with the Temporal CLI (on Temporal Cloud, create the namespace in the Cloud UI or with tcld first), then start durawait again:\n"+
			"temporal operator namespace create --namespace %s --retention %dh%s\n%s",
			ErrNamespaceNotFound, c.Namespace, c.Namespace, int(retention.Hours()), suffix(c.Connect),
			CreateLines(c.Namespace, c.Names, c.SearchAttributes, c.Connect))
	}
	g, err := Check(ctx, s.Operator, c.Namespace, c.SearchAttributes, c.Names)
	if err != nil {
		return err
	}
	var errs []error
	if len(g.Missing) > 0 {
		errs = append(errs, fmt.Errorf("%w (%s): create them with the Temporal CLI, then start durawait again:\n%s",
			ErrMissingSearchAttributes, strings.Join(g.Missing, ", "), CreateLines(c.Namespace, g.Missing, c.SearchAttributes, c.Connect)))
	}
	if len(g.WrongType) > 0 {
		errs = append(errs, wrongTypeError(c.Namespace, g.WrongType))
	}
	return errors.Join(errs...)
}

// EmbeddedOptions say what the embedded engine's namespace must have.
type EmbeddedOptions struct {
	Namespace        string
	SearchAttributes map[string]enumspb.IndexedValueType
	// Names lists SearchAttributes' names in order.
	Names []string
	// Retired are search attributes durawait no longer sets: removed from
	// the namespace when it has them, before the missing ones are added
	// (a SQL visibility store holds ten Keyword attributes at most).
	Retired []string
	// Retention of closed workflows; unchanged when zero.
	Retention time.Duration
	// Poll is how often a just-registered search attribute is looked for
	// until it is listed; 100 ms when zero.
	Poll time.Duration
}

// PrepareEmbedded registers the search attributes the namespace lacks (a
// data dir created by an earlier release has none) and sets its retention,
// on the embedded engine, before any worker starts. It returns once every
// search attribute is usable (see awaitUsable) or ctx ends.
func PrepareEmbedded(ctx context.Context, s Services, o EmbeddedOptions) error {
	g, err := Check(ctx, s.Operator, o.Namespace, o.SearchAttributes, o.Names)
	if err != nil {
		return err
	}
	if len(g.WrongType) > 0 {
		return wrongTypeError(o.Namespace, g.WrongType)
	}
	missing := g.Missing
	if len(missing) > 0 {
		if err := removeRetired(ctx, s.Operator, o.Namespace, o.Retired); err != nil {
			return err
		}
		add := map[string]enumspb.IndexedValueType{}
		for _, name := range missing {
			add[name] = o.SearchAttributes[name]
		}
		if _, err := s.Operator.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: o.Namespace, SearchAttributes: add,
		}); err != nil {
			return fmt.Errorf("register search attributes %s on namespace %q: %w", strings.Join(missing, ", "), o.Namespace, err)
		}
		if err := awaitUsable(ctx, s, o); err != nil {
			return err
		}
	}
	if o.Retention > 0 {
		return setRetention(ctx, s.Workflow, o.Namespace, o.Retention)
	}
	return nil
}

// removeRetired removes from the namespace the retired search attributes
// it has.
func removeRetired(ctx context.Context, op operatorservice.OperatorServiceClient, ns string, retired []string) error {
	if len(retired) == 0 {
		return nil
	}
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return fmt.Errorf("list the search attributes of namespace %q: %w", ns, err)
	}
	var remove []string
	for _, name := range retired {
		if _, ok := have.GetCustomAttributes()[name]; ok {
			remove = append(remove, name)
		}
	}
	if len(remove) == 0 {
		return nil
	}
	if _, err := op.RemoveSearchAttributes(ctx, &operatorservice.RemoveSearchAttributesRequest{Namespace: ns, SearchAttributes: remove}); err != nil {
		return fmt.Errorf("remove the retired search attributes %s from namespace %q: %w", strings.Join(remove, ", "), ns, err)
	}
	return nil
}

// awaitUsable polls until every search attribute is listed and a
// visibility query accepts it: the engine's services read the namespace
// from a cache refreshed every few seconds, and a workflow that starts with
// or upserts one the cache does not know yet is refused.
func awaitUsable(ctx context.Context, s Services, o EmbeddedOptions) error {
	poll := o.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	clauses := make([]string, len(o.Names))
	for i, name := range o.Names {
		clauses[i] = name + ` = ""`
	}
	query := strings.Join(clauses, " OR ")
	for {
		missing, err := Missing(ctx, s.Operator, o.Namespace, o.SearchAttributes, o.Names)
		if err != nil {
			return err
		}
		if len(missing) == 0 {
			if _, err = s.Workflow.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
				Namespace: o.Namespace, Query: query,
			}); err == nil {
				return nil
			}
			missing = o.Names
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes %s of namespace %q were registered but are not usable yet: %w",
				strings.Join(missing, ", "), o.Namespace, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// setRetention updates the namespace's retention when it differs. It sends
// the retention alone: the server keeps every config field left unset
// (aliases, bad binaries, archival), where sending back the described
// config would rewrite them. A new retention applies to waits that close
// afterwards.
func setRetention(ctx context.Context, ws workflowservice.WorkflowServiceClient, ns string, retention time.Duration) error {
	desc, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if err != nil {
		return fmt.Errorf("describe namespace %q: %w", ns, err)
	}
	if desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() == retention {
		return nil
	}
	if _, err := ws.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: ns, Config: &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
	}); err != nil {
		return fmt.Errorf("set the retention of namespace %q to %s: %w", ns, retention, err)
	}
	return nil
}
