// Package rds is the built-in RouteConfiguration resource type
// (envoy.config.route.v3.RouteConfiguration), as a gRPC client uses it.
//
// Register [Type] with a registry and watch resources with [Watch]. A
// watcher receives a [*RouteConfiguration]: plain Go values that need no
// protobuf to read, shared by every watcher and so never to be modified.
// [RouteConfiguration.FindVirtualHost] picks the virtual host for a
// channel's authority; [RouteConfiguration.Proto] returns the message as
// sent, for printing. [FromProto] converts a message already in hand, such
// as a route_config inline in a Listener.
//
// # Decoding and validation
//
// The decoder converts the message without validating it, so a tool
// can call Type.Decoder alone to look at a resource the validator would
// reject. It fails only for bytes that do not parse, including the
// embedded FilterConfig and TypedStruct wrappers whose contents it needs.
// The validator then applies gRPC's client-side rules and reports every
// broken rule at once, each as "field path: rule", for example
//
//	virtual_hosts[0].routes[2].route.weighted_clusters: total weight is 0
//
// Route indexes in paths are positions in the message, which can differ
// from positions in VirtualHost.Routes (see below).
//
// The rules are those of gRFC A27 and A28 (routing), A31 (max stream
// duration), A39 (per-route filter configs), A42 (hash policies) and A44
// (retries), as grpc-go v1.85 and gRPC C-core implement them:
//
//   - virtual_hosts[i].domains is non-empty and each pattern is an exact
//     host, "*", or has one '*' as its first or last character (C-core);
//   - a route's match has a prefix, path or safe_regex path specifier;
//     safe_regex and header regexes are valid RE2 (Go's regexp syntax);
//   - a header matcher has a supported match specifier; prefix, suffix and
//     contains patterns are non-empty (grpc-go); a range has start <= end
//     (C-core);
//   - route.cluster is non-empty (C-core);
//   - weighted_clusters: every cluster name is non-empty (C-core); the sum
//     of weights is positive and at most 2^32-1; total_weight is ignored;
//   - route.cluster_specifier_plugin names a plugin of the
//     RouteConfiguration; a plugin has a typed_config, a unique name, and
//     is either optional or of a type gRPC implements (RLS);
//   - max_stream_duration is non-negative;
//   - hash_policy header policies have a header name and a valid rewrite
//     regex (C-core);
//   - retry_policy: num_retries, when set, is at least 1; base_interval
//     and max_interval are positive (grpc-go);
//   - typed_per_filter_config keys are non-empty and each config is of a
//     type a gRPC client filter accepts (fault, RBAC per route, GCP authn)
//     unless marked optional; the router filter takes none.
//
// As gRPC does, the decoder leaves out the routes gRPC ignores: those with
// query_parameters matchers, and those whose cluster specifier is
// cluster_header, an inline plugin, a kind unknown to this build, or an
// optional plugin gRPC does not implement. Routes whose action is not a
// route (redirect, direct_response, non_forwarding_action) are kept with
// a kind that says so: gRPC fails the RPCs they match. Hash policies other
// than header and filter_state "io.grpc.channel_id", and retry_on
// conditions other than gRPC status codes, are ignored.
//
// [Type] accepts per-filter overrides (typed_per_filter_config) of
// gRPC's HTTP filters; a client that runs filters of its own uses
// [NewType], whose Options.HTTPFilter names them.
//
// # Servers
//
// RDS cannot tell whether a client or a server will use a route
// configuration, so both are held to the same rules (gRFC A36) and a
// route's action may be non_forwarding_action, which only servers use. A
// server fails the RPCs that match any other action with UNAVAILABLE,
// and a client those that match a non_forwarding_action;
// [RouteConfiguration.CheckServerUse] reports the routes a server cannot
// use, for the warning A36 asks servers to log.
//
// # Dependencies
//
// A RouteConfiguration depends on every cluster (type
// envoy.config.cluster.v3.Cluster) its routes name, directly or with a
// positive weight, once each.
//
// # Deliberate differences from gRPC
//
//   - Domain matching in FindVirtualHost ignores ASCII case and needs a
//     wildcard to stand for at least one character, as C-core and Envoy
//     do; grpc-go compares case-sensitively and lets '*' match nothing.
//     Invalid patterns are rejected when the resource is validated (as in
//     C-core) rather than making every lookup fail (as in grpc-go).
//   - A weighted cluster without a weight counts as weight zero (grpc-go);
//     C-core rejects it.
//   - Route paths that cannot match a gRPC method ("foo", "/a/b/c") are
//     kept, as in grpc-go, where C-core drops the route.
//   - The contents of filter configs and of the RLS plugin config are not
//     parsed; only their types are checked. Type URLs are compared by
//     message name, ignoring the host part, as C-core does.
//   - runtime_fraction without default_value is ignored (C-core); grpc-go
//     reads it as 0%. A numerator above its denominator saturates at 100%
//     instead of overflowing.
//   - Durations are checked for sign only, not for the protobuf range of
//     seconds and nanos.
//   - Routes gRPC ignores are not validated at all, although gRPC checks
//     the match of a route it then drops for its cluster specifier.
//   - A route with no match field is rejected like one with no path
//     specifier.
//
// Auto host rewrite (gRFC A81) and the ext_proc and ext_authz per-route
// configs, which gRPC gates behind environment variables, are not read.
package rds
