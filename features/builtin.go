package features

import "time"

// Names of the server features gRPC defines.
const (
	NameFailOnDataErrors              = "fail_on_data_errors"
	NameResourceTimerIsTransientError = "resource_timer_is_transient_error"
	NameIgnoreResourceDeletion        = "ignore_resource_deletion"
	NameTrustedXDSServer              = "trusted_xds_server"
)

// NameDeltaXDS makes the engine speak incremental (delta) ADS to a server
// instead of State of the World. It is this library's name, not gRPC's:
// gRPC ignores server features it does not know (gRFC A27), so the same
// bootstrap still works for gRPC clients, which speak SotW to the server.
// In Go, bootstrap.ServerConfig.Delta says the same.
const NameDeltaXDS = "delta_xds"

// DeltaXDS is the feature named [NameDeltaXDS]. The engine always
// recognizes it; it has no hooks.
var DeltaXDS ServerFeature = named(NameDeltaXDS)

// The built-in features, as gRFC A88 defines them.
var (
	// FailOnDataErrors drops a cached resource on any data error (A88).
	FailOnDataErrors ServerFeature = failOnDataErrors{}
	// ResourceTimerIsTransientError runs the does-not-exist timer for 30 s
	// and makes its expiry UNAVAILABLE with cache state TIMEOUT (A88).
	ResourceTimerIsTransientError ServerFeature = resourceTimerIsTransient{}
	// IgnoreResourceDeletion is recognized and has no effect: A88 made
	// ignoring data errors the default. With
	// GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false the engine uses
	// [LegacyBuiltin], where it keeps its gRFC A53 meaning.
	IgnoreResourceDeletion ServerFeature = named(NameIgnoreResourceDeletion)
	// TrustedXDSServer is recognized; validators may consult it (gRFC A81).
	TrustedXDSServer ServerFeature = named(NameTrustedXDSServer)
)

// Builtin returns gRPC's server features with their A88 behaviour.
func Builtin() []ServerFeature {
	return []ServerFeature{FailOnDataErrors, ResourceTimerIsTransientError, IgnoreResourceDeletion, TrustedXDSServer}
}

// LegacyBuiltin returns the server features as gRPC behaved before A88
// (GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false): fail_on_data_errors
// and resource_timer_is_transient_error are recognized but inert, and
// ignore_resource_deletion keeps a cached resource that an LDS or CDS
// response deleted (gRFC A53).
func LegacyBuiltin() []ServerFeature {
	return []ServerFeature{
		named(NameFailOnDataErrors),
		named(NameResourceTimerIsTransientError),
		legacyIgnoreResourceDeletion{},
		TrustedXDSServer,
	}
}

// Named returns a feature with no hooks: a name the engine recognizes and
// validators may look up with [Set.Has].
func Named(name string) ServerFeature { return named(name) }

type named string

func (n named) Name() string { return string(n) }

type failOnDataErrors struct{}

func (failOnDataErrors) Name() string { return NameFailOnDataErrors }

func (failOnDataErrors) ErrorAction(ev ErrorEvent, def Action) Action {
	if ev.Class == DataError {
		return Drop
	}
	return def
}

type resourceTimerIsTransient struct{}

func (resourceTimerIsTransient) Name() string { return NameResourceTimerIsTransientError }

func (resourceTimerIsTransient) ResourceTimer(Timer) Timer {
	return Timer{Timeout: 30 * time.Second, Transient: true}
}

type legacyIgnoreResourceDeletion struct{}

func (legacyIgnoreResourceDeletion) Name() string { return NameIgnoreResourceDeletion }

func (legacyIgnoreResourceDeletion) ErrorAction(ev ErrorEvent, def Action) Action {
	if ev.Reason == ReasonDeletion {
		return Keep
	}
	return def
}

// Interface guards.
var (
	_ ErrorPolicy = failOnDataErrors{}
	_ TimerPolicy = resourceTimerIsTransient{}
	_ ErrorPolicy = legacyIgnoreResourceDeletion{}
)
