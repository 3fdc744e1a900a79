// Command xdsctl is an xDS client for operators. Pointed at a real
// control plane with gRPC's bootstrap file, it asks for resources the way
// a gRPC client does and shows what the client makes of them.
//
// Usage:
//
//	xdsctl watch   [flags] TYPE NAME...   print every update of the resources until interrupted
//	xdsctl resolve [flags] LISTENER       resolve a listener down to its endpoints, print the tree
//	xdsctl dump    [flags] TYPE NAME...   watch the resources, then print the client's CSDS view
//	xdsctl dump    --csds ADDR            print the CSDS view of a running xDS client
//	xdsctl help    [COMMAND]              print the help, or a command's
//	xdsctl version                        print xdsctl's version (also --version)
//
// TYPE is lds|listener, rds|route, cds|cluster, eds|endpoint or
// leds|collection, a full type URL such as
// type.googleapis.com/envoy.config.listener.v3.Listener, or its message
// name.
//
// Flags may come before or after the arguments; "--" ends them. Common
// flags:
//
//	--bootstrap FILE        gRPC xDS bootstrap file; without it, the file named by
//	                        $GRPC_XDS_BOOTSTRAP, else the JSON in $GRPC_XDS_BOOTSTRAP_CONFIG
//	--v                     log the xDS engine's debug logs to stderr
//	--resource-timeout DUR  (advanced) length of the does-not-exist timer (default 15s)
//
// # watch
//
// watch prints one event per update or error, each starting with a header
// line that carries the client's version and gRFC A88 cache state for the
// resource when the event arrived; an update is followed by the resource
// as indented protojson, an error by its gRPC status code and message:
//
//	=== 2025-01-02T15:04:05.000Z UPDATE Listener "listener.example.com" version="1" state=ACKED
//	{
//	  "name": "listener.example.com",
//	  ...
//	}
//	=== 2025-01-02T15:05:00.000Z AMBIENT ERROR Listener "listener.example.com" version="1" state=NACKED failed_version="2"
//	INVALID_ARGUMENT: Listener resource "listener.example.com": ... (node ID: my-node)
//
// It runs until SIGINT or SIGTERM, then closes the client and exits 0.
//
// # resolve
//
// resolve follows the Listener's dependencies (route configuration,
// clusters, endpoints, LEDS collections) and prints the resolved tree,
// then the resolution note of each cluster whose branch has ambient
// errors, if any. While the server cannot be reached
// (UNAVAILABLE) it keeps trying; --timeout (default 10s) bounds the wait.
// On a failed resource or a timeout it names the resource that failed, or
// those still awaited and the last error, and exits 1.
//
// # dump
//
// dump with a bootstrap watches the resources until they have all arrived
// or failed, or --wait (default 2s) passes, and prints the client's CSDS
// view (envoy.service.status.v3.ClientConfig) as protojson. dump --csds
// ADDR calls FetchClientStatus on a running client's CSDS service over
// plaintext gRPC instead and prints the ClientStatusResponse.
//
// A usage error prints one line naming the problem and a hint, and exits
// 2.
//
// # Exit status
//
//	0  success; for watch, stopped by SIGINT or SIGTERM
//	1  failure: unreadable bootstrap, unreachable server, a resource missing
//	   or invalid, a timeout
//	2  usage error
package main
