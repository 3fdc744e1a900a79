// Package cds is the Cluster resource type (CDS): how a cluster finds its
// endpoints, how calls are balanced across them, circuit breaking, outlier
// detection, load reporting and upstream TLS.
//
// Register [Type] (or use package builtin; [NewType] when the client has
// custom LB policies) and watch a cluster with [Watch].
//
// # Validation
//
// The rules are gRPC's current ones, as C-core (xds_cluster_parser.cc,
// xds_lb_policy_registry.cc) and grpc-go (xdsresource/unmarshal_cds.go,
// xdslbregistry) implement them:
//
//   - name must be non-empty.
//   - Discovery type (gRFC A27, A37): type EDS with eds_cluster_config
//     whose eds_config is ads or self, and a service_name when the cluster
//     name is an xdstp:// name; or type LOGICAL_DNS with a load_assignment
//     holding exactly one locality with exactly one endpoint whose
//     socket_address has an address, a port_value and no resolver_name; or
//     a cluster_type whose typed_config is an
//     envoy.extensions.clusters.aggregate.v3.ClusterConfig with a non-empty
//     clusters list. Every other type is rejected.
//   - Load balancing: if load_balancing_policy is set it replaces lb_policy
//     (gRFC A52). Its first entry of a type gRPC supports is used
//     (round_robin, ring_hash, least_request, wrr_locality, pick_first,
//     client_side_weighted_round_robin, or a TypedStruct naming a policy
//     [Options.CustomLBPolicy] accepts); other entries are skipped, a list
//     with none is rejected, and nesting is limited to 16 levels.
//     Otherwise lb_policy must be ROUND_ROBIN, RING_HASH or LEAST_REQUEST.
//     Ring hash (gRFC A42): hash_function XX_HASH, each ring size set
//     within [1, 8388608], minimum not above maximum. Least request
//     (gRFC A48): choice_count at least 2. Client-side weighted round
//     robin: valid, non-negative durations and error_utilization_penalty.
//   - lrs_server, if set, must be self.
//   - circuit_breakers (gRFC A32): max_requests of the first threshold for
//     priority DEFAULT, 1024 when absent.
//   - outlier_detection (gRFC A50): durations valid and non-negative;
//     max_ejection_percent, enforcing_success_rate,
//     failure_percentage_threshold and enforcing_failure_percentage at
//     most 100. It is recorded with A50's defaults filled in.
//   - transport_socket (gRFC A29, A82): its typed_config must be an
//     UpstreamTlsContext whose common_tls_context names CA certificates,
//     either a ca_certificate_provider_instance or system_root_certs (in
//     validation_context or combined_validation_context); the identity
//     certificate, if any, comes from a certificate provider instance;
//     tls_certificates, SDS secrets, tls_params, custom_handshaker,
//     verify_certificate_spki/hash, require_signed_certificate_timestamp,
//     crl and custom_validator_config are rejected;
//     match_subject_alt_names must be valid string matchers.
//     transport_socket_matches is rejected, as grpc-go rejects it. Every
//     certificate provider instance named must be in the bootstrap's
//     certificate_providers, when registry.DecodeOptions.CertificateProviders
//     says which are: an engine sets it from its bootstrap unless
//     engine.Config.IgnoreCertificateProviders is set, and a decoder called
//     on its own leaves the names unchecked.
//
// Errors name the field path and the rule, for instance
// "ring_hash_lb_config.minimum_ring_size: 0 out of range [1, 8388608]",
// and one error lists every problem found (up to 64).
//
// # Deliberate differences from gRPC
//
//   - A TypedStruct LB policy is supported only if
//     [Options.CustomLBPolicy] says so, since the decoder cannot see the
//     client's LB policy registry.
//   - An empty name in an aggregate cluster's clusters list is rejected:
//     no Cluster can have that name.
//   - The aggregate cluster extension is recognized by its typed_config
//     type, as C-core does; the extension's name is not checked.
//   - Metadata (CSM telemetry labels, GCP authentication audiences),
//     upstream_config, override_host_status, lrs_report_endpoint_metrics
//     and SNI settings are not read.
//
// # Decoded form
//
// [Cluster] is immutable and shared by every watcher. Its Equal compares
// the bytes the server sent; Proto decodes them afresh. The lb_policy enum
// is mapped to gRPC's policy tree: ROUND_ROBIN becomes wrr_locality with a
// round_robin child, as gRFC A52 specifies.
//
// # Dependencies
//
// An EDS cluster depends on the ClusterLoadAssignment named by
// [Cluster.EDSName]; an aggregate cluster on each child Cluster (a cluster
// may name itself; the graph watch detects cycles); a LOGICAL_DNS cluster
// on nothing.
package cds
