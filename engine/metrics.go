package engine

import (
	"context"
	"maps"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/xdsengine/xdsengine/registry"
)

// The engine's metrics (gRFC A78, with A88's cache states) through
// OpenTelemetry: counters where the events happen, and two gauges read
// from the engine's state when a reader collects (Engine.gauges).

// Metric and label names of gRFC A78, with A88's cache states, and the
// engine's own beyond A78: failures that gRPC's client leaves to its
// logs, the store's work.
const (
	MetricResourceUpdatesValid   = "grpc.xds_client.resource_updates_valid"
	MetricResourceUpdatesInvalid = "grpc.xds_client.resource_updates_invalid"
	MetricServerFailure          = "grpc.xds_client.server_failure"
	MetricConnected              = "grpc.xds_client.connected"
	MetricResources              = "grpc.xds_client.resources"
	MetricResponsesTooLarge      = "xdsengine.xds_client.responses_too_large"
	MetricResponsesUnreadable    = "xdsengine.xds_client.responses_unreadable"
	MetricSlowWatchers           = "xdsengine.xds_client.slow_watchers"
	MetricStoreLoads             = "xdsengine.xds_client.store_loads"
	MetricStoreServed            = "xdsengine.xds_client.store_served"
	MetricStoreWrites            = "xdsengine.xds_client.store_writes"
	MetricStoreErrors            = "xdsengine.xds_client.store_errors"
	MetricStoreDropped           = "xdsengine.xds_client.store_dropped"
	MetricRepeatedResponses      = "xdsengine.xds_client.repeated_responses"

	LabelTarget       = "grpc.target"
	LabelServer       = "grpc.xds.server"
	LabelAuthority    = "grpc.xds.authority"
	LabelResourceType = "grpc.xds.resource_type"
	LabelCacheState   = "grpc.xds.cache_state"
)

// counter is one of the engine's counters.
type counter int

const (
	countValid counter = iota
	countInvalid
	countFailures
	countTooLarge
	countUnreadable
	countSlow
	countLoads
	countServed
	countWrites
	countStoreFailures
	countDropped
	countRepeated
)

var counterSpecs = [...]struct{ name, unit, description string }{
	countValid:         {MetricResourceUpdatesValid, "{resource}", "Valid resources received from xDS servers; unchanged ones count too."},
	countInvalid:       {MetricResourceUpdatesInvalid, "{resource}", "Invalid resources received from xDS servers, and xRFC TP3 resource errors."},
	countFailures:      {MetricServerFailure, "{failure}", "Times an xDS server went from reachable to unreachable (gRFC A57)."},
	countTooLarge:      {MetricResponsesTooLarge, "{response}", "Responses larger than the engine's receive limit (Config.MaxResponseBytes), which could not be read."},
	countUnreadable:    {MetricResponsesUnreadable, "{response}", "Responses whose DiscoveryResponse envelope did not parse."},
	countSlow:          {MetricSlowWatchers, "{notification}", "Watcher notifications whose done() was still outstanding after Config.SlowWatcherThreshold, holding back the server's next response."},
	countLoads:         {MetricStoreLoads, "{load}", "Loads of the last-known-good store (Config.Store) at start."},
	countServed:        {MetricStoreServed, "{resource}", "Resources served from the last-known-good store while no server of their authority answered."},
	countWrites:        {MetricStoreWrites, "{change_set}", "Change sets written to the last-known-good store."},
	countStoreFailures: {MetricStoreErrors, "{operation}", "Loads and change sets of the last-known-good store that failed."},
	countDropped:       {MetricStoreDropped, "{resource}", "Resources of the last-known-good store not served: corrupt bytes, or invalid under the registry of the day."},
	countRepeated:      {MetricRepeatedResponses, "{response}", "Responses that repeated the last one of their type in answer to its ACK, with no subscription changed: ACKed, not applied."},
}

// gaugeValues is the engine's state as the gauges report it: whether each
// server is connected, and how many watched resources are in each cache
// state, by authority and type.
type gaugeValues struct {
	Connected map[string]bool
	Resources map[gaugeKey]int64
}

// gaugeKey is one count of the resources gauge.
type gaugeKey struct{ Authority, Type, State string }

// metricsRecorder records one engine's metrics.
type metricsRecorder struct {
	target       attribute.KeyValue
	counters     [len(counterSpecs)]metric.Int64Counter
	registration metric.Registration
	once         sync.Once
}

// newMetrics makes the instruments on mp (nil records nothing); gauges gives the
// engine's state when a reader collects, or false once it is closed.
func newMetrics(mp metric.MeterProvider, target, version string, gauges func() (gaugeValues, bool)) (*metricsRecorder, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	r := &metricsRecorder{target: attribute.String(LabelTarget, target)}
	meter := mp.Meter("github.com/xdsengine/xdsengine/engine", metric.WithInstrumentationVersion(version))
	var err error
	for c, d := range counterSpecs {
		if r.counters[c], err = meter.Int64Counter(d.name, metric.WithUnit(d.unit), metric.WithDescription(d.description)); err != nil {
			return nil, err
		}
	}
	connected, err := meter.Int64ObservableGauge(MetricConnected, metric.WithUnit("{bool}"),
		metric.WithDescription("1 while the server is healthy: a response since the last failure, or an open stream of a server that answered before with nothing new to send (Config.QuietWindow)."))
	if err != nil {
		return nil, err
	}
	resources, err := meter.Int64ObservableGauge(MetricResources, metric.WithUnit("{resource}"),
		metric.WithDescription("Watched resources, by authority, type and cache state (gRFC A78, A88)."))
	if err != nil {
		return nil, err
	}
	r.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		g, ok := gauges()
		if !ok {
			return nil
		}
		for _, server := range slices.Sorted(maps.Keys(g.Connected)) {
			v := int64(0)
			if g.Connected[server] {
				v = 1
			}
			o.ObserveInt64(connected, v, metric.WithAttributes(r.target, attribute.String(LabelServer, server)))
		}
		for k, n := range g.Resources {
			o.ObserveInt64(resources, n, metric.WithAttributes(r.target, attribute.String(LabelAuthority, k.Authority),
				attribute.String(LabelResourceType, k.Type), attribute.String(LabelCacheState, k.State)))
		}
		return nil
	}, connected, resources)
	return r, err
}

// add counts n events of server about typeURL ("" for none).
func (r *metricsRecorder) add(c counter, n int, server, typeURL string) {
	if n <= 0 {
		return
	}
	attrs := make([]attribute.KeyValue, 2, 3) // room for the type: one allocation
	attrs[0], attrs[1] = r.target, attribute.String(LabelServer, server)
	if typeURL != "" {
		attrs = append(attrs, attribute.String(LabelResourceType, registry.TypeName(typeURL)))
	}
	r.counters[c].Add(context.Background(), int64(n), metric.WithAttributes(attrs...))
}

// close stops the gauges.
func (r *metricsRecorder) close() {
	r.once.Do(func() {
		if r.registration != nil {
			_ = r.registration.Unregister()
		}
	})
}
