// Package bootstrap reads gRPC's xDS bootstrap: the JSON file (or
// environment variable) that tells an xDS client which management servers
// to talk to, with which credentials and server features, who the client
// is (its node), and which servers serve which xdstp:// authorities (gRFC
// A27, A47, A65, A71, A95, A97). The same file serves gRPC and this
// library, with the same meaning.
//
// [Parse] and [FromEnv] parse with gRPC's credential types. A [Parser]
// carries a [Credentials] set, a plain value, to which a program adds
// channel or call credential types of its own by name; the engine's gRPC
// transport builds connections from the same set. Nothing here registers
// anything globally.
//
// Every problem of a bootstrap is reported at once, each naming its JSON
// path:
//
//	bootstrap: xds_servers[0].server_uri: must be a non-empty string
//	bootstrap: node.locality.zone: want string, got number
//
// A credential type reports the problems of its config as
// [registry.FieldError] values, the module's one field error, which the
// parser puts under their JSON path.
//
// [Bootstrap.ListenerName] names a client's Listener for a target and
// [Bootstrap.ServerListenerName] an xDS-enabled server's for its listening
// address (gRFC A36).
//
// The package knows nothing of the engine: tools (xdsctl, a CSDS client,
// a bootstrap generator's tests) use it alone.
package bootstrap
