// Package engine is an xDS client: it runs the aggregated discovery
// service (ADS) protocol against one or more xDS management servers,
// caches what they send and tells watchers, for any resource type in a
// [registry.Registry]. It knows no resource type by name: types reach it
// as [registry.ResourceType] descriptors (the built-in ones under types/,
// or a user's own).
//
//	bs, err := bootstrap.FromEnv() // GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG
//	...
//	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
//	...
//	defer e.Close()
//	cancel := lds.Watch(e, "example.com:443", watcher)
//
// [Engine] implements [Source], the small interface everything that
// consumes resources accepts; a [Mux] routes watches across engines,
// [Pool] shares one engine per target, and package graph follows
// dependencies over any Source.
//
// # Protocol (gRFC A27, A57)
//
// One ADS stream per xDS server, shared by every authority that lists
// it, opened at the first watch; the node and client features go in its
// first request. Requests are built when the writer is free, so a burst
// of watches leaves in a few. A response is ACKed with its version when a
// resource was valid or none failed, else NACKed with the last accepted
// version and an error_detail naming each failing resource by index,
// name and rule. A stream that fails before any response is a
// connectivity error, retried with backoff ([DefaultBackoff]); one that
// ends after a response is replaced at once. The does-not-exist timer of
// an uncached resource (15 s) runs from the write of its subscription
// until the resource or an error for it arrives.
//
// # When a server is healthy
//
// A server is healthy (AuthorityStatus.Connected, the
// grpc.xds_client.connected gauge, no ambient UNAVAILABLE) from its first
// response after a failure; and, if it has answered before, from the
// moment a request of its new stream that subscribes to names has gone
// unanswered for Config.QuietWindow (1 s) with the stream open: a server
// with nothing new to send says nothing (an incremental server whose
// initial_resource_versions are current; go-control-plane's LinearCache
// for a subscription that adds nothing), and one that refuses a stream
// ends it. That silence also answers the wildcards ([Engine.WatchAll]) of
// those types. A server that has never answered is healthy only once it
// answers. A server that sends the same response again in answer to each
// ACK is ACKed, not applied (xdsengine.xds_client.repeated_responses).
//
// # Wildcards
//
// Over State of the World a wildcard is written as Envoy first writes it,
// with no names (the legacy wildcard, which every server reads; names
// watched beside it are implied); a wildcard that joins names a stream
// has written replaces the stream, since "*" is a name to some servers
// (go-control-plane's SnapshotCache) and an empty list after names means
// "none". Over incremental xDS it is "*", beside the names. A server that
// turns the legacy wildcard off (go-control-plane's
// DeactivateLegacyWildcard) serves wildcards over incremental xDS only.
//
// # The last-known-good store
//
// With Config.Store, what the engine accepts is written off the response
// path and kept until its server deletes it (or says it does not exist),
// it ages out (Config.StoreMaxAge, forgotten at the next load), or the
// node or bootstrap changes (the store's digest): cancelling a watch, as
// every clean shutdown does, forgets nothing. It is served to an
// authority's watches when no server of the authority has answered: at
// once when the server fails (a refused connection), and after
// Config.StoreWait (3 s) when it neither fails nor answers (an address
// that drops what it is sent, a server that accepts and says nothing).
// Once a server answers, it wins: each resource still served from the
// store gets the does-not-exist timer an uncached resource has, from that
// first answer, and goes (NOT_FOUND, forgotten by the store) if the
// server does not send it in time. Package lastgood is a file-backed
// store.
//
// # Errors and the cache (gRFC A88)
//
// Watchers implement [ResourceWatcher]: OnResourceChanged delivers a
// resource or an error that means "stop using the resource";
// OnAmbientError reports one that leaves the last resource in use:
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
// xRFC TP3 resource_errors are ACKed. A new watcher of a cached resource
// gets the resource, then the current ambient error. Every error a
// watcher sees is an [*Error], with a gRPC status code (status.Code works
// on it), a [Kind], the resource, the server, and a message ending with
// the node ID. Each entry is in one of A88's states ([CacheState]); a
// watcher that implements [UpdateWatcher] also gets each update's
// version, server and time. [Engine.Dump] is the CSDS view (gRFC A40).
// Keeping or dropping a resource on a data error, and the timer, are
// server features (package features), to which Config.Features adds.
//
// # Threading and flow control
//
// Callbacks run one at a time on one goroutine per engine, never with a
// lock held, so a callback may call Watch and cancel. Each gets a done
// function: the engine reads a server's next response only once every
// watcher notified of the previous one has called it. Watch and cancel
// never wait for a response to be applied.
//
// # Fallback, federation, incremental xDS
//
// xdstp:// names go to their authority's servers (gRFC A47); an authority
// falls back to its next server when the active one is unreachable and a
// watched resource is uncached, or on unreachability alone with
// fallback_on_reachability_only, and returns to a higher one at its first
// response (A71, A95; [FallbackPolicy] changes the decision). A server
// with "delta_xds" ([features.NameDeltaXDS]) is spoken to incrementally:
// subscriptions as changes, each resource with its own version, the
// cached versions listed on every new stream, removed_resources as
// deletions; a glob collection ("…/*", xRFC TP1) delivers a
// *registry.GlobCollection of its members. Watchers see the same as over
// State of the World.
//
// # Inside
//
// The wire protocol lives in the internal package wire; the engine is its
// Host, and the two share no lock. A stream asks for a type's
// subscription when its writer is free, decodes responses on its side
// (resources whose bytes its server sent before are not decoded again),
// and hands the engine immutable parts, in order, each applied in one
// short critical section; the answer goes out once the last is applied.
// README.md's architecture section tells more.
//
// # Environment
//
// GRPC_EXPERIMENTAL_XDS_FALLBACK, GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING
// and GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK are honoured when "false"
// (see [features.Switches]); Config.Switches pins them.
package engine
