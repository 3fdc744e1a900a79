package relay

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// The relay's metrics, beside its engines' (gRFC A78, one engine per
// aggregation key, labelled with the key as grpc.target).
const (
	// MetricDownstreamNACKs counts the responses downstream clients
	// rejected, by key and type. None is forwarded upstream.
	MetricDownstreamNACKs = "xdsengine.relay.downstream_nacks"
	// MetricUpstreamNACKs counts the resources of upstream responses the
	// keys' engines rejected (NACKed), by key and type: their clients keep
	// the last good version. See KeyStatus.UpstreamNACKs.
	MetricUpstreamNACKs = "xdsengine.relay.upstream_nacks"
	// MetricUnservable counts the upstream resources the Encoder could
	// not serve.
	MetricUnservable = "xdsengine.relay.unservable_resources"
	// MetricKeys is the number of aggregation keys with an engine.
	MetricKeys = "xdsengine.relay.keys"
	// MetricUpstreamUnreachable is the number of keys whose upstream is
	// failing: their clients are served the last good configuration.
	MetricUpstreamUnreachable = "xdsengine.relay.upstream_unreachable"
	// MetricWatches is the number of downstream watches, by state: "held"
	// ones wait for the upstream to resolve what their answer speaks for
	// (see the package doc), "open" ones do not.
	MetricWatches = "xdsengine.relay.downstream_watches"
	// MetricSubscriptions is the number of upstream subscriptions (a
	// wildcard counts one), lingering ones included.
	MetricSubscriptions = "xdsengine.relay.upstream_subscriptions"
	// MetricResources is the number of resources served, all keys and
	// types together.
	MetricResources = "xdsengine.relay.resources"

	// LabelWatchState is MetricWatches' label: "open" or "held".
	LabelWatchState = "xdsengine.relay.watch_state"
)

type metrics struct {
	nacks, upstreamNACKs, unservables metric.Int64Counter
	registration                      metric.Registration
	once                              sync.Once
}

func newMetrics(mp metric.MeterProvider, r *Relay) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	meter := mp.Meter("github.com/xdsengine/xdsengine/relay", metric.WithInstrumentationVersion(engine.Version))
	m := &metrics{}
	var err error
	if m.nacks, err = meter.Int64Counter(MetricDownstreamNACKs, metric.WithUnit("{response}"),
		metric.WithDescription("Responses a downstream client rejected; none is forwarded upstream, nor sent again to the client.")); err != nil {
		return nil, err
	}
	if m.upstreamNACKs, err = meter.Int64Counter(MetricUpstreamNACKs, metric.WithUnit("{resource}"),
		metric.WithDescription("Resources of upstream responses the relay rejected (NACKed); their clients keep the last good version.")); err != nil {
		return nil, err
	}
	if m.unservables, err = meter.Int64Counter(MetricUnservable, metric.WithUnit("{resource}"),
		metric.WithDescription("Upstream resources the relay's encoder could not serve.")); err != nil {
		return nil, err
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		if err != nil {
			return nil
		}
		var g metric.Int64ObservableGauge
		g, err = meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return g
	}
	keys := gauge(MetricKeys, "{key}", "Aggregation keys with an upstream engine.")
	unreachable := gauge(MetricUpstreamUnreachable, "{key}", "Aggregation keys whose upstream fails; their clients keep the last good configuration.")
	watches := gauge(MetricWatches, "{watch}", "Downstream watches, open or held until the upstream resolves what their answer speaks for.")
	subs := gauge(MetricSubscriptions, "{subscription}", "Upstream subscriptions, lingering ones included; a wildcard counts one.")
	resources := gauge(MetricResources, "{resource}", "Resources served downstream, all keys and types.")
	if err != nil {
		return nil, err
	}
	m.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		var c counts
		for _, s := range r.Status() {
			c.keys++
			if s.Err != nil {
				c.unreachable++
			}
			c.open += int64(s.Watches - s.Held)
			c.held += int64(s.Held)
			c.subs += int64(s.Subscriptions)
			c.resources += int64(s.Resources)
		}
		o.ObserveInt64(keys, c.keys)
		o.ObserveInt64(unreachable, c.unreachable)
		o.ObserveInt64(watches, c.open, metric.WithAttributes(attribute.String(LabelWatchState, "open")))
		o.ObserveInt64(watches, c.held, metric.WithAttributes(attribute.String(LabelWatchState, "held")))
		o.ObserveInt64(subs, c.subs)
		o.ObserveInt64(resources, c.resources)
		return nil
	}, keys, unreachable, watches, subs, resources)
	return m, err
}

type counts struct{ keys, unreachable, open, held, subs, resources int64 }

func attrs(key, typeURL string) metric.AddOption {
	return metric.WithAttributes(attribute.String(engine.LabelTarget, key),
		attribute.String(engine.LabelResourceType, registry.TypeName(typeURL)))
}

func (m *metrics) nack(key, typeURL string) {
	m.nacks.Add(context.Background(), 1, attrs(key, typeURL))
}

func (m *metrics) upstreamNACK(key, typeURL string) {
	m.upstreamNACKs.Add(context.Background(), 1, attrs(key, typeURL))
}

func (m *metrics) unservable(key, typeURL string) {
	m.unservables.Add(context.Background(), 1, attrs(key, typeURL))
}

func (m *metrics) close() {
	m.once.Do(func() {
		if m.registration != nil {
			_ = m.registration.Unregister()
		}
	})
}
