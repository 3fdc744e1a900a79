// Package engine is an xDS client: it runs the aggregated discovery
// service (ADS) protocol against one or more xDS management servers,
// caches what they send and tells watchers, for any resource type in a
// [registry.Registry].
//
// The engine knows no resource type by name. Types live in their own
// packages (the built-in ones under types/, or a user's own) and reach the
// engine as [registry.ResourceType] descriptors.
//
// # Use
//
//	bs, err := bootstrap.FromEnv() // GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG
//	...
//	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
//	...
//	defer e.Close()
//	cancel := lds.Watch(e, "example.com:443", watcher)
//
// [Engine] implements [Source], the small interface everything that
// consumes resources accepts ([NewSource] makes one of a function); a
// [Mux] routes watches across several engines, and package graph follows
// dependencies (Listener → route configuration → clusters → endpoints)
// over any Source.
//
// # Protocol (gRFC A27, A57)
//
// The engine opens one SotW ADS stream per xDS server it needs, shared by
// every authority that lists the server, and only once something is
// watched. The first request of each stream carries the node with the
// user agent and client features. Each request lists every subscribed name
// of its type; requests are built when written, so a burst of watches
// leaves in a few requests per type, each carrying what gathered while
// the one before it was written. A response is ACKed with its version
// when at least one resource was valid or none failed, and NACKed
// otherwise, with the last accepted version and an error_detail naming
// every failing resource by index and name. The accepted version is kept
// per server and type across streams; the nonce is per stream.
//
// A stream that fails before any response is a connectivity error: it is
// reported and retried with exponential backoff ([DefaultBackoff]: 1 s
// ×1.6, ±20 %, at most 120 s; Config.Backoff changes it). A stream that ends after a response is not an error and is
// replaced at once, with backoff reset. The does-not-exist timer of an
// uncached resource starts when its subscription is written on a stream,
// stops when the resource or an error for it arrives or the stream ends,
// and lasts 15 s.
//
// # Errors and the cache (gRFC A88)
//
// Watchers implement [ResourceWatcher]: OnResourceChanged delivers a
// resource or an error that means "stop using the resource";
// OnAmbientError reports an error that leaves the last resource in use.
// Which one a watcher gets follows A88's table:
//
//	error                                   cached  fail_on_data_errors  watcher sees
//	server unreachable / stream failed      no      any                  OnResourceChanged(UNAVAILABLE)
//	server unreachable / stream failed      yes     any                  OnAmbientError(UNAVAILABLE)
//	NACK                                    no      any                  OnResourceChanged(INVALID_ARGUMENT)
//	NACK                                    yes     no                   OnAmbientError(INVALID_ARGUMENT)
//	NACK                                    yes     yes                  OnResourceChanged(INVALID_ARGUMENT), dropped
//	does-not-exist timer                    no      any                  OnResourceChanged(NOT_FOUND, or UNAVAILABLE with resource_timer_is_transient_error)
//	LDS/CDS deletion                        yes     no                   OnAmbientError(NOT_FOUND)
//	LDS/CDS deletion                        yes     yes                  OnResourceChanged(NOT_FOUND), dropped
//	TP3 NOT_FOUND / PERMISSION_DENIED       no      any                  OnResourceChanged(code)
//	TP3 NOT_FOUND / PERMISSION_DENIED       yes     no                   OnAmbientError(code)
//	TP3 NOT_FOUND / PERMISSION_DENIED       yes     yes                  OnResourceChanged(code), dropped
//	TP3 other code                          no      any                  OnResourceChanged(code)
//	TP3 other code                          yes     any                  OnAmbientError(code)
//
// xRFC TP3 resource_errors are ACKed, not NACKed. A new watcher of a
// cached resource gets the resource and then the current ambient error, in
// that order. Every error a watcher sees is an [*Error]: it carries a gRPC
// status code (status.Code works on it), a [Kind], the resource, the
// server, and a message that ends with the node ID.
//
// Each cache entry is in one of A88's states ([CacheState]: REQUESTED,
// DOES_NOT_EXIST, ACKED, NACKED, RECEIVED_ERROR, TIMEOUT) and holds the
// cached resource and the last error independently. [Engine.Dump] returns
// them as a CSDS ClientConfig (gRFC A40); [Engine.ResourceStatus] gives
// one resource's entry without building the whole dump, and
// [Engine.Authorities] which server each authority uses now.
//
// A watcher that also implements [UpdateWatcher] (or, through [Watch], a
// [TypedUpdateWatcher]) receives each update with the version, server and
// time it came from.
//
// The keep-or-drop decision and the timer are policies: server features
// of package features, looked up by their bootstrap names and folded in
// bootstrap order, to which a user can add their own through
// Config.Features.
//
// # Threading and flow control
//
// All callbacks of an engine run one at a time on one goroutine, never
// with the engine's lock held, so a callback may call Watch and cancel.
// Each gets a done function: the engine reads the next response from a
// stream only once every watcher notified of the previous response has
// called done. ACKs are not held back.
//
// # Fallback and federation (gRFC A47, A71, A95)
//
// xdstp:// names are routed to their authority's server list; an
// authority falls back to its next server when its active server is
// unreachable and a watched resource is still uncached, or on
// unreachability alone with fallback_on_reachability_only; the first
// response of a higher-priority server makes it active again. See
// [FallbackPolicy] to change the decision.
//
// # Incremental xDS
//
// A server with the feature "delta_xds" ([features.NameDeltaXDS]) or
// bootstrap.ServerConfig.Delta is spoken to over DeltaAggregatedResources:
// subscriptions are sent as changes, each resource carries its own
// version (the one CSDS shows), every new stream lists the versions
// cached from the server in initial_resource_versions so that they are
// not sent again, and removed_resources deletes, for every type, by the
// rules of gRFC A88. A resource with a TTL is NACKed. Everything watchers
// see is as with State of the World; after a connectivity failure, the
// server's first response clears the error of the resources it confirmed
// unchanged by not re-sending them.
//
// A watch of an xdstp:// glob collection ("…/*", xRFC TP1) delivers a
// *registry.GlobCollection of the resources the server sends under it,
// updated as they are added and removed; it belongs on a delta server,
// since only delta says that a member was removed.
//
// # Inside
//
// The wire protocol (requests, nonces, ACK/NACK, the does-not-exist
// timers and the decode stage) lives in the internal package wire, behind
// a small stream interface that the State-of-the-World and incremental
// streams both implement. A response goes through three stages:
// decoded with no engine lock held, applied to the cache in short
// critical sections of a few dozen resources (a Watch call made meanwhile
// waits for one of them, not for the whole response; no request of the
// type is written until the last), then delivered to watchers on the
// serializer. The stages overlap: a large response's first parts are
// applied while its later ones are still being decoded, in order.
//
// # Environment
//
// GRPC_EXPERIMENTAL_XDS_FALLBACK, GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING
// and GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK are honoured when "false"
// (see [features.Switches]); Config.Switches pins them, and they reach
// the resource types through registry.DecodeOptions.Switches and
// registry.ResourceType.Enabled.
package engine
