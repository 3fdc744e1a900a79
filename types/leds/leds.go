package leds

import (
	"bytes"
	"fmt"
	"strings"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/endpoint"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
)

// TypeURL is the type URL of LbEndpointCollection resources.
const TypeURL = "type.googleapis.com/envoy.config.endpoint.v3.LbEndpointCollection"

// Type describes LbEndpointCollection resources to a registry. A SotW
// response need not carry every subscribed collection, and a collection
// depends on nothing.
// Registering it makes the engine advertise the client feature
// xds.endpoint.supports_lb_endpoint_collection, which tells servers that
// this client understands list collections (gRFC A95). The type is off,
// and the feature not advertised, when the engine's switches disable
// gRFC A95 (GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false).
var Type = registry.ResourceType{
	TypeURL:        TypeURL,
	Name:           "LbEndpointCollection",
	Decoder:        registry.DecoderFunc(decode),
	ClientFeatures: []string{ClientFeature},
	Enabled:        func(sw features.Switches) bool { return !sw.DisableEndpointFallback },
}

// ClientFeature is the client feature that advertises LEDS list
// collection support (gRFC A95).
const ClientFeature = "xds.endpoint.supports_lb_endpoint_collection"

// Endpoint is one validated LbEndpoint ([endpoint.Endpoint]); EDS
// localities hold the same type.
type Endpoint = endpoint.Endpoint

// HealthStatus is an endpoint's reported health.
type HealthStatus = endpoint.HealthStatus

// Health statuses, numbered as in envoy.config.core.v3.HealthStatus.
const (
	HealthUnknown   = endpoint.HealthUnknown
	HealthHealthy   = endpoint.HealthHealthy
	HealthUnhealthy = endpoint.HealthUnhealthy
	HealthDraining  = endpoint.HealthDraining
	HealthTimeout   = endpoint.HealthTimeout
	HealthDegraded  = endpoint.HealthDegraded
)

// LbEndpointCollection is a decoded, validated LEDS list collection: the
// endpoints of one EDS locality. It must not be modified; the engine hands
// the same value to every watcher.
type LbEndpointCollection struct {
	// Name is the collection's name, taken from the
	// envoy.service.discovery.v3.Resource wrapper because the message has
	// none.
	Name string
	// Endpoints are the entries, in order. Empty means the locality is
	// unreachable, which is valid (gRFC A95).
	Endpoints []Endpoint

	raw []byte
}

// Proto returns the resource as an
// *envoy.config.endpoint.v3.LbEndpointCollection, decoded afresh from the
// bytes the server sent, so callers may modify it.
func (c *LbEndpointCollection) Proto() proto.Message {
	return rawresource.Proto[endpointpb.LbEndpointCollection](c.raw)
}

// Equal reports whether other is an *LbEndpointCollection with the same
// name that the server sent as the same bytes.
func (c *LbEndpointCollection) Equal(other registry.Resource) bool {
	return rawresource.Equal(c, other, func(a, b *LbEndpointCollection) bool {
		return a.Name == b.Name && bytes.Equal(a.raw, b.raw)
	})
}

// Interface guards.
var _ registry.Equaler = (*LbEndpointCollection)(nil)

// String lists the collection's endpoint addresses.
func (c *LbEndpointCollection) String() string {
	parts := make([]string, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		parts[i] = ep.Address.String()
	}
	noun := "endpoints"
	if len(parts) == 1 {
		noun = "endpoint"
	}
	return fmt.Sprintf("%d %s: %s", len(parts), noun, strings.Join(parts, " "))
}
