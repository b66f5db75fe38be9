package engine

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/primitives"
)

// The embedded engine's billable actions, as durawait records them
// (docs/observability.md).
const (
	// ActionsMetric is the OpenTelemetry counter of the engine's actions
	// (Prometheus: durawait_engine_actions_total).
	ActionsMetric = "durawait.engine.actions"
	// ActionTypeAttribute is its one attribute: the server's action_type.
	ActionTypeAttribute = "action_type"
	// actionsMeterName is the instrumentation scope of ActionsMetric.
	actionsMeterName = "github.com/durawait/durawait/internal/engine"
	// serverActionCounter is the Temporal server's counter of billable
	// actions (metrics.ActionCounter), tagged action_type.
	serverActionCounter = "action"
	// serverActionTypeTag is the tag of that counter that names the action.
	serverActionTypeTag = "action_type"
	// serverNamespaceTag names the namespace of a request.
	serverNamespaceTag = "namespace"
	// unknownActionType stands for an action counted without a type.
	unknownActionType = "unknown"
)

// actionHandler is a metrics.Handler for the Temporal server that forwards
// one of the hundreds of metrics the server emits, its "action" counter,
// to an OpenTelemetry counter with the action's type as its only
// attribute, and drops everything else. The action counter is what
// Temporal Cloud bills (go.temporal.io/server common/rpc/interceptor's
// emitActionMetric), so the engine's actions can be read, per wait, on
// durawait's /metrics. The actions of the server's own system workflows
// (namespace temporal-system: its scanners, started at boot and run twice
// a day) are dropped too: they are nobody's waits, and a Temporal Cloud
// namespace has none.
type actionHandler struct {
	counter metric.Int64Counter
	// actionType is the action_type given by WithTags, if any; a tag of
	// the same key given to Record wins.
	actionType string
	// system is set once WithTags named the system namespace.
	system bool
}

var _ metrics.Handler = actionHandler{}

// newActionHandler creates ActionsMetric on mp's meter.
func newActionHandler(mp metric.MeterProvider) (metrics.Handler, error) {
	counter, err := mp.Meter(actionsMeterName).Int64Counter(ActionsMetric,
		metric.WithUnit("{action}"),
		metric.WithDescription("Billable actions of the embedded Temporal engine (the server's action counter, what Temporal Cloud bills), by action_type."))
	if err != nil {
		return nil, fmt.Errorf("engine: create the %s counter: %w", ActionsMetric, err)
	}
	return actionHandler{counter: counter}, nil
}

// WithTags keeps the action_type among tags, and whether the namespace is
// the system's; the server's other tags (operation, service…) are dropped.
func (h actionHandler) WithTags(tags ...metrics.Tag) metrics.Handler {
	for _, t := range tags {
		switch t.Key {
		case serverActionTypeTag:
			h.actionType = t.Value
		case serverNamespaceTag:
			h.system = t.Value == primitives.SystemLocalNamespace
		}
	}
	return h
}

// Counter forwards the action counter; every other counter is dropped.
func (h actionHandler) Counter(name string) metrics.CounterIface {
	if name != serverActionCounter {
		return metrics.NoopCounterMetricFunc
	}
	return metrics.CounterFunc(func(v int64, tags ...metrics.Tag) {
		actionType, system := h.actionType, h.system
		for _, t := range tags {
			switch t.Key {
			case serverActionTypeTag:
				actionType = t.Value
			case serverNamespaceTag:
				system = t.Value == primitives.SystemLocalNamespace
			}
		}
		if system {
			return
		}
		if actionType == "" {
			actionType = unknownActionType
		}
		h.counter.Add(context.Background(), v, metric.WithAttributeSet(attribute.NewSet(attribute.String(ActionTypeAttribute, actionType))))
	})
}

// Gauge drops every gauge.
func (actionHandler) Gauge(string) metrics.GaugeIface { return metrics.NoopGaugeMetricFunc }

// Timer drops every timer.
func (actionHandler) Timer(string) metrics.TimerIface { return metrics.NoopTimerMetricFunc }

// Histogram drops every histogram.
func (actionHandler) Histogram(string, metrics.MetricUnit) metrics.HistogramIface {
	return metrics.NoopHistogramMetricFunc
}

// Stop has nothing to stop: the MeterProvider is its owner's.
func (actionHandler) Stop(log.Logger) {}

// StartBatch returns the handler itself: a "wide event" is recorded as
// its metrics one by one.
func (h actionHandler) StartBatch(string) metrics.BatchHandler { return actionBatch{h} }

// actionBatch is an actionHandler as a metrics.BatchHandler.
type actionBatch struct{ actionHandler }

// Close ends nothing: each metric was recorded as it came.
func (actionBatch) Close() error { return nil }
