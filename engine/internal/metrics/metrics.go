// Package metrics records an engine's gRFC A78 metrics (with A88's cache
// states) through OpenTelemetry: counters where the events happen, and
// two gauges read from the engine's state when a reader collects.
package metrics

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metric and label names of gRFC A78, with A88's cache states, and the
// engine's own beyond A78: failures that gRPC's client leaves to its
// logs. Package engine exports them.
const (
	ResourceUpdatesValid   = "grpc.xds_client.resource_updates_valid"
	ResourceUpdatesInvalid = "grpc.xds_client.resource_updates_invalid"
	ServerFailure          = "grpc.xds_client.server_failure"
	Connected              = "grpc.xds_client.connected"
	Resources              = "grpc.xds_client.resources"
	ResponsesTooLarge      = "xdsengine.xds_client.responses_too_large"
	ResponsesUnreadable    = "xdsengine.xds_client.responses_unreadable"
	SlowWatchers           = "xdsengine.xds_client.slow_watchers"
	StoreLoads             = "xdsengine.xds_client.store_loads"
	StoreServed            = "xdsengine.xds_client.store_served"
	StoreWrites            = "xdsengine.xds_client.store_writes"
	StoreErrors            = "xdsengine.xds_client.store_errors"
	StoreDropped           = "xdsengine.xds_client.store_dropped"
	RepeatedResponses      = "xdsengine.xds_client.repeated_responses"

	LabelTarget       = "grpc.target"
	LabelServer       = "grpc.xds.server"
	LabelAuthority    = "grpc.xds.authority"
	LabelResourceType = "grpc.xds.resource_type"
	LabelCacheState   = "grpc.xds.cache_state"
)

// Counter is one of the engine's counters.
type Counter int

const (
	Valid Counter = iota
	Invalid
	Failures
	TooLarge
	Unreadable
	Slow
	Loads
	Served
	Writes
	StoreFailures
	Dropped
	Repeated
)

var counters = [...]struct{ name, unit, description string }{
	Valid:         {ResourceUpdatesValid, "{resource}", "Valid resources received from xDS servers; unchanged ones count too."},
	Invalid:       {ResourceUpdatesInvalid, "{resource}", "Invalid resources received from xDS servers, and xRFC TP3 resource errors."},
	Failures:      {ServerFailure, "{failure}", "Times an xDS server went from reachable to unreachable (gRFC A57)."},
	TooLarge:      {ResponsesTooLarge, "{response}", "Responses larger than the engine's receive limit (Config.MaxResponseBytes), which could not be read."},
	Unreadable:    {ResponsesUnreadable, "{response}", "Responses whose DiscoveryResponse envelope did not parse."},
	Slow:          {SlowWatchers, "{notification}", "Watcher notifications whose done() was still outstanding after Config.SlowWatcherThreshold, holding back the server's next response."},
	Loads:         {StoreLoads, "{load}", "Loads of the last-known-good store (Config.Store) at start."},
	Served:        {StoreServed, "{resource}", "Resources served from the last-known-good store while no server of their authority answered."},
	Writes:        {StoreWrites, "{change_set}", "Change sets written to the last-known-good store."},
	StoreFailures: {StoreErrors, "{operation}", "Loads and change sets of the last-known-good store that failed."},
	Dropped:       {StoreDropped, "{resource}", "Resources of the last-known-good store not served: corrupt bytes, or invalid under the registry of the day."},
	Repeated:      {RepeatedResponses, "{response}", "Responses that repeated the last one of their type in answer to its ACK, with no subscription changed: ACKed, not applied."},
}

// Gauges is the engine's state as the gauges report it: whether each
// server is connected, and how many watched resources are in each cache
// state, by authority and type.
type Gauges struct {
	Connected map[string]bool
	Resources map[ResourceKey]int64
}

// ResourceKey is one count of the resources gauge.
type ResourceKey struct{ Authority, Type, State string }

// Recorder records one engine's metrics.
type Recorder struct {
	target       attribute.KeyValue
	counters     [len(counters)]metric.Int64Counter
	registration metric.Registration
	once         sync.Once
}

// New makes the instruments on mp (nil records nothing); gauges gives the
// engine's state when a reader collects, or false once it is closed.
func New(mp metric.MeterProvider, target, version string, gauges func() (Gauges, bool)) (*Recorder, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	r := &Recorder{target: attribute.String(LabelTarget, target)}
	meter := mp.Meter("github.com/xdsengine/xdsengine/engine", metric.WithInstrumentationVersion(version))
	var err error
	for c, d := range counters {
		if r.counters[c], err = meter.Int64Counter(d.name, metric.WithUnit(d.unit), metric.WithDescription(d.description)); err != nil {
			return nil, err
		}
	}
	connected, err := meter.Int64ObservableGauge(Connected, metric.WithUnit("{bool}"),
		metric.WithDescription("1 while the server is healthy: a response since the last failure, or an open stream of a server that answered before with nothing new to send (Config.QuietWindow)."))
	if err != nil {
		return nil, err
	}
	resources, err := meter.Int64ObservableGauge(Resources, metric.WithUnit("{resource}"),
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

// Add counts n events of server about typeURL ("" for none).
func (r *Recorder) Add(c Counter, n int, server, typeURL string) {
	if n <= 0 {
		return
	}
	attrs := make([]attribute.KeyValue, 2, 3) // room for the type: one allocation
	attrs[0], attrs[1] = r.target, attribute.String(LabelServer, server)
	if typeURL != "" {
		attrs = append(attrs, attribute.String(LabelResourceType, TypeLabel(typeURL)))
	}
	r.counters[c].Add(context.Background(), int64(n), metric.WithAttributes(attrs...))
}

// Close stops the gauges.
func (r *Recorder) Close() {
	r.once.Do(func() {
		if r.registration != nil {
			_ = r.registration.Unregister()
		}
	})
}

// TypeLabel is a type URL as the resource type label shows it: the
// message's full name.
func TypeLabel(typeURL string) string { return typeURL[strings.LastIndexByte(typeURL, '/')+1:] }
