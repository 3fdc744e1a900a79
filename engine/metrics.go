package engine

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/xdsengine/xdsengine/registry"
)

// Metric and label names of gRFC A78, with A88's cache states.
const (
	MetricResourceUpdatesValid   = "grpc.xds_client.resource_updates_valid"
	MetricResourceUpdatesInvalid = "grpc.xds_client.resource_updates_invalid"
	MetricServerFailure          = "grpc.xds_client.server_failure"
	MetricConnected              = "grpc.xds_client.connected"
	MetricResources              = "grpc.xds_client.resources"

	// Metrics of this engine's own, beyond A78: failures that gRPC's
	// client leaves to its logs.
	MetricResponsesTooLarge   = "xdsengine.xds_client.responses_too_large"
	MetricResponsesUnreadable = "xdsengine.xds_client.responses_unreadable"
	MetricSlowWatchers        = "xdsengine.xds_client.slow_watchers"

	LabelTarget       = "grpc.target"
	LabelServer       = "grpc.xds.server"
	LabelAuthority    = "grpc.xds.authority"
	LabelResourceType = "grpc.xds.resource_type"
	LabelCacheState   = "grpc.xds.cache_state"
)

const meterName = "github.com/xdsengine/xdsengine/engine"

// metrics records the engine's A78 metrics through OpenTelemetry. The
// counters are recorded where the events happen; the two gauges are read
// from the engine's state when the reader collects.
type metrics struct {
	target       attribute.KeyValue
	valid        metric.Int64Counter
	invalid      metric.Int64Counter
	failure      metric.Int64Counter
	tooLarge     metric.Int64Counter
	unreadable   metric.Int64Counter
	slow         metric.Int64Counter
	registration metric.Registration
	once         sync.Once
}

func newMetrics(e *Engine, mp metric.MeterProvider) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := &metrics{target: attribute.String(LabelTarget, e.cfg.Target)}
	meter := mp.Meter(meterName, metric.WithInstrumentationVersion(Version))
	var err error
	if m.valid, err = meter.Int64Counter(MetricResourceUpdatesValid, metric.WithUnit("{resource}"),
		metric.WithDescription("Valid resources received from xDS servers; unchanged ones count too.")); err != nil {
		return nil, err
	}
	if m.invalid, err = meter.Int64Counter(MetricResourceUpdatesInvalid, metric.WithUnit("{resource}"),
		metric.WithDescription("Invalid resources received from xDS servers, and xRFC TP3 resource errors.")); err != nil {
		return nil, err
	}
	if m.failure, err = meter.Int64Counter(MetricServerFailure, metric.WithUnit("{failure}"),
		metric.WithDescription("Times an xDS server went from reachable to unreachable (gRFC A57).")); err != nil {
		return nil, err
	}
	if m.tooLarge, err = meter.Int64Counter(MetricResponsesTooLarge, metric.WithUnit("{response}"),
		metric.WithDescription("Responses larger than the engine's receive limit (Config.MaxResponseBytes), which could not be read.")); err != nil {
		return nil, err
	}
	if m.unreadable, err = meter.Int64Counter(MetricResponsesUnreadable, metric.WithUnit("{response}"),
		metric.WithDescription("Responses whose DiscoveryResponse envelope did not parse.")); err != nil {
		return nil, err
	}
	if m.slow, err = meter.Int64Counter(MetricSlowWatchers, metric.WithUnit("{notification}"),
		metric.WithDescription("Watcher notifications whose done() was still outstanding after Config.SlowWatcherThreshold, holding back the server's next response.")); err != nil {
		return nil, err
	}
	connected, err := meter.Int64ObservableGauge(MetricConnected, metric.WithUnit("{bool}"),
		metric.WithDescription("1 while the engine has an ADS stream to the server that has received a response since the last failure."))
	if err != nil {
		return nil, err
	}
	resources, err := meter.Int64ObservableGauge(MetricResources, metric.WithUnit("{resource}"),
		metric.WithDescription("Watched resources, by authority, type and cache state (gRFC A78, A88)."))
	if err != nil {
		return nil, err
	}
	m.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		e.observeGauges(o, m, connected, resources)
		return nil
	}, connected, resources)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) close() {
	m.once.Do(func() {
		if m.registration != nil {
			_ = m.registration.Unregister()
		}
	})
}

func resourceTypeLabel(t registry.ResourceType) string {
	return t.TypeURL[lastSlash(t.TypeURL)+1:]
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func (m *metrics) serverFailure(c *channel) {
	m.failure.Add(context.Background(), 1, metric.WithAttributes(m.target, attribute.String(LabelServer, c.server.URI)))
}

func (m *metrics) responseTooLarge(c *channel) {
	m.tooLarge.Add(context.Background(), 1, metric.WithAttributes(m.target, attribute.String(LabelServer, c.server.URI)))
}

func (m *metrics) unreadableResponse(c *channel, typeURL string) {
	m.unreadable.Add(context.Background(), 1, metric.WithAttributes(m.target, attribute.String(LabelServer, c.server.URI),
		attribute.String(LabelResourceType, typeURL[lastSlash(typeURL)+1:])))
}

func (m *metrics) slowWatchers(c *channel, t registry.ResourceType, n int) {
	m.slow.Add(context.Background(), int64(n), metric.WithAttributes(m.target, attribute.String(LabelServer, c.server.URI),
		attribute.String(LabelResourceType, resourceTypeLabel(t))))
}

func (m *metrics) resourceUpdates(c *channel, t registry.ResourceType, valid, invalid int) {
	attrs := metric.WithAttributes(m.target, attribute.String(LabelServer, c.server.URI), attribute.String(LabelResourceType, resourceTypeLabel(t)))
	if valid > 0 {
		m.valid.Add(context.Background(), int64(valid), attrs)
	}
	if invalid > 0 {
		m.invalid.Add(context.Background(), int64(invalid), attrs)
	}
}

// observeGauges reports connected per server and resource counts per
// (authority, type, cache state), from the state under the lock.
func (e *Engine) observeGauges(o metric.Observer, m *metrics, connected, resources metric.Int64ObservableGauge) {
	type key struct{ authority, typ, state string }
	counts := map[key]int64{}
	type conn struct {
		server string
		up     bool
	}
	var conns []conn
	e.lock()
	if e.closed.Load() {
		e.unlock()
		return
	}
	for _, c := range e.channels {
		conns = append(conns, conn{c.server.URI, c.connected})
	}
	for _, a := range e.allAuthoritiesLocked() {
		for _, byName := range a.resources {
			for _, en := range byName {
				if en.orphaned {
					continue
				}
				counts[key{a.displayName(), resourceTypeLabel(*en.typ), en.state.MetricLabel(en.value != nil)}]++
			}
		}
	}
	e.unlock()
	slices.SortFunc(conns, func(a, b conn) int {
		if a.server < b.server {
			return -1
		}
		return 1
	})
	for _, c := range conns {
		v := int64(0)
		if c.up {
			v = 1
		}
		o.ObserveInt64(connected, v, metric.WithAttributes(m.target, attribute.String(LabelServer, c.server)))
	}
	for k, n := range counts {
		o.ObserveInt64(resources, n, metric.WithAttributes(m.target,
			attribute.String(LabelAuthority, k.authority), attribute.String(LabelResourceType, k.typ), attribute.String(LabelCacheState, k.state)))
	}
}
