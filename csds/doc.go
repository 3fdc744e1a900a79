// Package csds serves the Client Status Discovery Service,
// envoy.service.status.v3.ClientStatusDiscoveryService, for xDS engines: an
// operator asks a running process what xDS configuration its clients hold
// and in which state each resource is (gRFC A40), the way gRPC's own CSDS
// service answers for gRPC's xDS client.
//
// # Use
//
// Add the service to the process's admin gRPC server, the one that also
// serves health, channelz and the like, never one open to data plane
// traffic: a dump holds every resource the process was sent.
//
//	pool, err := engine.NewPool(cfg) // or one engine: csds.ForEngine(e)
//	...
//	admin := grpc.NewServer()
//	csds.RegisterWithReflection(admin, csds.ForPool(pool))
//	lis, err := net.Listen("tcp", "127.0.0.1:50051")
//	...
//	go admin.Serve(lis)
//
// and query it with any gRPC client, for example
//
//	grpcurl -plaintext 127.0.0.1:50051 \
//	    envoy.service.status.v3.ClientStatusDiscoveryService/FetchClientStatus
//
// [RegisterWithReflection] also registers gRPC server reflection, which is
// what lets grpcurl and similar tools call the service without proto
// files, as grpc-go's admin package bundles the admin services; use
// [Register] on a server that registers reflection itself. Reflection
// serves the descriptors linked into the process, so a tool can also
// render each xds_config as JSON when its resource type's Go package is
// linked in (the built-in ones are); grpcurl shows any other as raw bytes.
//
// What is reported is a [Source]: [ForEngine] adapts one engine,
// [ForPool] a pool of engines, one per data plane target, and
// [SourceFunc] anything else, such as several pools at once.
//
// # Responses
//
// Each response has one ClientConfig per engine, with client_scope set to
// the engine's target (gRFC A71) and node to the node the engine sends to
// its servers. Its generic_xds_configs list every watched resource, sorted
// by type URL and name, with:
//
//   - client_status: the resource's cache state of gRFC A88: REQUESTED
//     (subscribed, nothing received yet), DOES_NOT_EXIST (the server does
//     not have it, or deleted it), ACKED, NACKED (the last version
//     received was rejected), RECEIVED_ERROR (the server sent an error for
//     it) or TIMEOUT (nothing arrived in time from a server whose timeouts
//     are transient);
//   - version_info, xds_config and last_updated: the resource in use,
//     exactly as received, when one is cached. A resource can be cached
//     and NACKED, DOES_NOT_EXIST or RECEIVED_ERROR at once: the client
//     still uses the older resource;
//   - error_state: the last error, with the rejected version for a NACK.
//
// The states are the ones watchers are told about. An engine changes a
// resource's state under its lock before it schedules the watcher
// callbacks that report the change, and every request reads the engine
// afresh, so once a watcher has seen an error, such as a NACK as an
// ambient error or a does-not-exist error, CSDS reports the matching
// state, or a later one.
//
// FetchClientStatus answers one request. StreamClientStatus answers each
// request on the stream with a fresh dump, one response per request,
// until the client closes its side; nothing is pushed unasked.
//
// # Node matchers
//
// A ClientStatusRequest may carry node_matchers, which let a control
// plane pick which of its many clients to report. gRFC A40 says a client
// ignores them, since a process reports only itself, and gRPC C++
// (src/cpp/server/csds/csds.cc) does not look at the request at all.
// grpc-go (xds/csds) and grpc-java (CsdsService) instead reject a request
// with node_matchers with INVALID_ARGUMENT. This package follows the gRFC: node_matchers, like
// the rest of the request, are ignored, and the full dump is returned.
// Doing so means a tool written for a control plane still gets an answer
// from a process, and the node in each ClientConfig says whose it is.
//
// # Errors
//
// Like gRPC, the service does not fail for want of xDS clients: a pool
// with no engine yet, or a closed pool, gives an empty response (no
// config), as gRPC does before any xDS client exists. That is why
// [Source] has no error result. The only errors are those of the RPC
// itself, such as a cancelled stream.
package csds
