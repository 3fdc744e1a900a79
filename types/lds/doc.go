// Package lds is the built-in Listener resource type
// (envoy.config.listener.v3.Listener), as a gRPC client uses it: an API
// listener whose HttpConnectionManager either names a RouteConfiguration
// to fetch with RDS or carries one inline.
//
// Register [Type] with a registry and watch resources with [Watch]. A
// watcher receives a [*Listener]: plain Go values that need no protobuf
// to read, shared by every watcher and so never to be modified. An inline
// route configuration is decoded by package rds and exposed as
// Listener.RouteConfig. [Listener.Proto] returns the message as sent, for
// printing.
//
// # Decoding and validation
//
// The decoder converts the message without validating it, so a tool
// can call Type.Decoder alone to look at a Listener the validator would
// reject. It fails only for bytes that do not parse, including the
// embedded HttpConnectionManager, TypedStruct filter configs, and the
// filter config wrappers of an inline route configuration. The validator
// then applies gRPC's client-side rules and reports every broken rule at
// once, each as "field path: rule", for example
//
//	api_listener.api_listener.rds.config_source: must specify ads or self
//
// The rules are those of gRFC A27 (LDS), A39 (HTTP filters), A41 (RBAC
// header settings) and A31 (max stream duration), as grpc-go v1.85 and
// gRPC C-core implement them for clients:
//
//   - api_listener is set (server-side listeners are not supported) and
//     holds a v3 HttpConnectionManager; the v2 type is rejected, as in
//     grpc-go;
//   - xff_num_trusted_hops is zero and original_ip_detection_extensions
//     is empty (A41);
//   - the route specifier is rds or route_config; scoped_routes and none
//     are rejected;
//   - rds.config_source is present and is ads or self; rds.route_config_name
//     is non-empty (grpc-go);
//   - an inline route_config satisfies every rule of package rds, reported
//     under api_listener.api_listener.route_config;
//   - common_http_protocol_options.max_stream_duration is non-negative;
//   - http_filters: every name is non-empty and unique; every filter is of
//     a type a gRPC client implements (router, fault, GCP authn) unless it
//     is optional, and RBAC, a server-only filter, is rejected unless
//     optional; of the filters a client runs, there is at least one, the
//     last is the router and no other is. An empty list is rejected, as
//     in grpc-go and C-core.
//
// # Dependencies
//
// A Listener using RDS depends on its RouteConfiguration
// (type envoy.config.route.v3.RouteConfiguration). A Listener with inline
// routes depends on the clusters those routes name, exactly as package
// rds reports for a RouteConfiguration.
//
// # Deliberate differences from gRPC
//
//   - HTTPFilters keeps the optional filters gRPC skips, so that a tool
//     sees the chain as sent; validation skips them as gRPC does.
//   - Filter configs are checked by type only; their contents are not
//     parsed. A router config in a TypedStruct is accepted, where grpc-go
//     rejects it while parsing.
//   - A filter with no typed_config (one using config_discovery) is
//     accepted when optional, as in grpc-go; C-core rejects it.
//   - Type URLs are compared by message name, ignoring the host part, as
//     C-core does; grpc-go requires the type.googleapis.com host.
//   - Durations are checked for sign only, not for the protobuf range of
//     seconds and nanos.
//
// The ext_proc and ext_authz filters and the disabled flag, which grpc-go
// gates behind environment variables, are not supported. See package rds
// for the differences in route validation.
package lds
