package endpoint

import (
	"net/netip"
	"strconv"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// HealthStatus is an endpoint's health as the management server reports it
// (envoy.config.core.v3.HealthStatus). Values the proto may gain later are
// kept as they are and are not usable.
type HealthStatus int32

// Health statuses, numbered as in the proto.
const (
	HealthUnknown   HealthStatus = HealthStatus(corepb.HealthStatus_UNKNOWN)
	HealthHealthy   HealthStatus = HealthStatus(corepb.HealthStatus_HEALTHY)
	HealthUnhealthy HealthStatus = HealthStatus(corepb.HealthStatus_UNHEALTHY)
	HealthDraining  HealthStatus = HealthStatus(corepb.HealthStatus_DRAINING)
	HealthTimeout   HealthStatus = HealthStatus(corepb.HealthStatus_TIMEOUT)
	HealthDegraded  HealthStatus = HealthStatus(corepb.HealthStatus_DEGRADED)
)

// String returns the proto enum name.
func (s HealthStatus) String() string {
	if n, ok := corepb.HealthStatus_name[int32(s)]; ok {
		return n
	}
	return "HealthStatus(" + strconv.Itoa(int(s)) + ")"
}

// Usable reports whether gRPC load-balances to an endpoint with this
// status: only UNKNOWN and HEALTHY (gRFC A27). DRAINING endpoints are
// reachable only through stateful session affinity overrides (gRFC A55).
func (s HealthStatus) Usable() bool { return s == HealthUnknown || s == HealthHealthy }

// Endpoint is one backend: a validated LbEndpoint.
type Endpoint struct {
	// Address is endpoint.address.socket_address: an IP literal and port.
	Address netip.AddrPort
	// AdditionalAddresses are endpoint.additional_addresses (gRFC A61), in
	// order; nil when there are none. gRPC tries Address first.
	AdditionalAddresses []netip.AddrPort
	// Hostname is endpoint.hostname, or "".
	Hostname string
	// Weight is load_balancing_weight, 1 when unset; never 0.
	Weight uint32
	// HealthStatus is health_status as sent; see [HealthStatus.Usable].
	HealthStatus HealthStatus
}

// Usable reports whether gRPC would send traffic to e.
func (e Endpoint) Usable() bool { return e.HealthStatus.Usable() }
