// Package lds is the built-in Listener resource type
// (envoy.config.listener.v3.Listener), as gRPC uses it: a client's API
// listener, whose HttpConnectionManager either names a RouteConfiguration
// to fetch with RDS or carries one inline, and an xDS-enabled server's
// listener (gRFC A36), whose filter chains set each connection's TLS
// (A29), HTTP filters (A39, RBAC per A41) and routes.
//
// Register [Type] with a registry and watch resources with [Watch], or
// [WatchServer] for a server, which names its Listener with
// bootstrap.Bootstrap.ServerListenerName. A watcher receives a
// [*Listener]: plain Go values that need no protobuf to read, shared by
// every watcher and so never to be modified. An inline route
// configuration is decoded by package rds. [Listener.Proto] returns the
// message as sent, for printing.
//
// # Clients and servers in one type
//
// As in gRPC, a Listener with api_listener is a client's and any other a
// server's. Both decode to a *Listener: a server's has [Listener.Server]
// set and the API listener's fields empty ([Listener.IsServer] tells
// them apart). One Go type rather than two behind an interface keeps
// everything that handles Listeners whole: the engine's typed watches,
// package graph, Equal and Proto see one type per type URL, as grpc-go's
// ListenerUpdate (APIListener or TCPListener) and C-core's
// XdsListenerResource (a variant) do, and client code written against
// the API listener's fields keeps working unchanged. Server code reads
// Server, or uses WatchServer, which turns an API listener into an error.
//
// A server's Listener resolved by package graph (graph.Watch) is
// composed ([Listener.Compose]): every filter chain that fetches its
// routes with RDS also has them in HTTP.RouteConfig, so the resolved graph
// says which chain uses which routes. A server watches no clusters, so
// the Listener is graph.Shallow: its RouteConfigurations are resolved,
// not the clusters their routes name. [ServerListener.FilterChainFor]
// finds the chain of a connection as gRPC does.
//
// # Decoding and validation
//
// The decoder converts the message without validating it, so a tool can
// call Type.Decoder alone to look at a Listener the validator would
// reject. It fails only for bytes that do not parse, including the
// embedded HttpConnectionManager, TypedStruct filter configs, a server's
// RBAC configs and DownstreamTlsContext, and the filter config wrappers
// of an inline route configuration. The validator then applies gRPC's
// rules and reports every broken rule at once, each as "field path:
// rule", for example
//
//	api_listener.api_listener.rds.config_source: must specify ads or self
//	filter_chains[2].filter_chain_match: overlaps filter_chains[0] ("mesh"): both match connections with source port 8080
//
// [Type] knows gRPC's HTTP filters; a client that runs filters of its own
// (package xdsgrpc's Filter) uses [NewType], whose Options.HTTPFilter
// names them: they then need no is_optional, and run before the router.
//
// The client rules are those of gRFC A27 (LDS), A39 (HTTP filters), A41
// (RBAC header settings) and A31 (max stream duration), as grpc-go v1.85
// and gRPC C-core implement them for clients:
//
//   - api_listener holds a v3 HttpConnectionManager; the v2 type is
//     rejected, as in grpc-go;
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
// A server's Listener follows gRFC A36, A29, A39 and A41 as C-core's
// LdsResourceParseServer and grpc-go's processServerSideListener do:
//
//   - address is a TCP socket_address whose port_value is at most 65535;
//     listener_filters is empty and use_original_dst is not true;
//   - every filter chain and the default one is valid, those gRPC never
//     selects included (C-core); a Listener without filter chains, or
//     none of whose chains can be selected, has a default_filter_chain;
//   - filter_chain_match: prefix_ranges and source_prefix_ranges hold IP
//     addresses, normalized as A36 says (an absent prefix_len is 0, one
//     beyond the address's bits is cut to them, host bits are masked);
//     source_type is ANY, SAME_IP_OR_LOOPBACK or EXTERNAL. A chain that
//     sets destination_port, server_names, application_protocols or a
//     transport_protocol other than "raw_buffer" is never selected
//     ([FilterChainMatch.Unmatchable]), and among chains of one
//     destination a "raw_buffer" one evicts those that name no transport
//     protocol, in order, as gRPC builds its filter chain map. Two chains
//     that would match the same connections are rejected, naming both;
//   - filters holds exactly one network filter, an HttpConnectionManager
//     message (not in a TypedStruct), and names are unique;
//   - the HttpConnectionManager follows the client's rules above, except
//     that http_filters are judged for servers: router and RBAC run, fault
//     and GCP authn are rejected unless optional;
//   - an RBAC filter's config (A41) is an RBAC message whose action, when
//     rules are set, is ALLOW or DENY (LOG makes gRPC ignore the filter,
//     and its rules are not judged); policies have no condition or
//     checked_condition; every permission and principal is of a kind gRPC
//     implements; header matchers have a specifier, a valid RE2 regex,
//     non-empty prefix, suffix and contains, and no ":scheme" or
//     "grpc-" name (in any case); string matchers follow the same rules
//     and take no ignore_case with safe_regex; CIDR ranges parse with a
//     length that fits the address;
//   - transport_socket is named "envoy.transport_sockets.tls" and holds a
//     DownstreamTlsContext: its common_tls_context names the server's
//     certificate provider (tls_certificate_provider_instance or the
//     deprecated tls_certificate_certificate_provider_instance); a
//     validation context, if any, names a CA provider
//     (ca_certificate_provider_instance, or the deprecated
//     validation_context_certificate_provider_instance) and sets no
//     match_subject_alt_names, system_root_certs, verify_certificate_spki,
//     verify_certificate_hash, require_signed_certificate_timestamp, crl
//     or custom_validator_config; SDS secrets, tls_certificates,
//     tls_params and custom_handshaker are rejected;
//     require_client_certificate needs the CA provider; require_sni is not
//     true and ocsp_staple_policy is LENIENT_STAPLING;
//   - certificate provider instances named must be in the bootstrap's
//     certificate_providers, when registry.DecodeOptions.CertificateProviders
//     says which are: an engine sets it from its bootstrap unless
//     engine.Config.IgnoreCertificateProviders is set.
//
// Route configurations are held to the same rules for clients and
// servers, since RDS cannot tell who uses one (A36). A server expects
// non_forwarding_action on every route and fails the RPCs that match
// another with UNAVAILABLE; rds.RouteConfiguration.CheckServerUse reports
// those routes, for the warning A36 asks servers to log.
//
// # Dependencies
//
// An API listener using RDS depends on its RouteConfiguration (type
// envoy.config.route.v3.RouteConfiguration); one with inline routes on the
// clusters those routes name, exactly as package rds reports for a
// RouteConfiguration. A server's Listener depends on the
// RouteConfigurations its filter chains fetch with RDS, once each.
//
// # Deliberate differences from gRPC
//
//   - HTTPFilters keeps the optional filters gRPC skips, so that a tool
//     sees the chain as sent; validation skips them as gRPC does.
//   - Filter configs other than a server's RBAC are checked by type only;
//     their contents are not parsed. A router config in a TypedStruct is
//     accepted, where grpc-go rejects it while parsing.
//   - A filter with no typed_config (one using config_discovery) is
//     accepted when optional, as in grpc-go; C-core rejects it.
//   - Type URLs are compared by message name, ignoring the host part, as
//     C-core does; grpc-go requires the type.googleapis.com host.
//   - Durations are checked for sign only, not for the protobuf range of
//     seconds and nanos.
//
// Where C-core and grpc-go judge a server's Listener differently, this
// package follows one and differs from the other:
//
//   - Chains gRPC never selects are validated (C-core); grpc-go drops
//     them unread.
//   - A chain must hold exactly one network filter (C-core, A36); grpc-go
//     accepts several HttpConnectionManagers and uses the first.
//   - A network filter may have an empty name (C-core); grpc-go rejects
//     it.
//   - A prefix_len beyond the address's bits is cut to them (C-core,
//     A36); grpc-go rejects it.
//   - A Listener none of whose chains can be selected needs a default
//     chain (grpc-go); C-core only asks for one when there is no chain.
//   - listener_filters are rejected (grpc-go, A36); C-core does not look.
//   - rds.config_source may be self (C-core); grpc-go servers want ads.
//   - transport_socket must be named envoy.transport_sockets.tls (grpc-go,
//     A29); C-core goes by the config's type.
//   - A validation context without a CA provider is rejected (grpc-go,
//     A29); C-core accepts it unless client certificates are required.
//     The deprecated validation_context_certificate_provider_instance of
//     CommonTlsContext names the CA, as in grpc-go; C-core ignores it.
//   - An RBAC policy with action LOG is not judged (C-core, A41); grpc-go
//     still rejects its conditions and header names. RBAC header names are
//     compared in lower case (grpc-go); C-core compares them as sent.
//     RBAC matchers are judged when the Listener is, as grpc-go does
//     while parsing the filter config (C-core mostly when the server
//     builds the policy), with the rules of route and TLS matchers here:
//     an empty prefix, suffix or contains is rejected even in the
//     deprecated header fields grpc-go accepts it in.
//     audit_logging_options and shadow_rules are not read, and
//     RBACPerRoute overrides in route configurations are checked by type.
//   - FilterChainFor skips a destination whose chains were all evicted or
//     never selectable and looks at the next most specific one, as
//     grpc-go does; C-core stops there and uses the default chain.
//
// The ext_proc and ext_authz filters and the disabled flag, which grpc-go
// gates behind environment variables, are not supported. See package rds
// for the differences in route validation.
package lds
