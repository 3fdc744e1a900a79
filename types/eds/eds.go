package eds

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/endpoint"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
	"github.com/xdsengine/xdsengine/types/leds"
)

// TypeURL is the type URL of ClusterLoadAssignment resources.
const TypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"

// Type describes ClusterLoadAssignment resources to a registry. A SotW
// response need not carry every subscribed resource. A resource depends on
// the LEDS collections its localities name (gRFC A95), unless the engine's
// switches turn A95 off (DecodeOptions.Switches.DisableEndpointFallback):
// localities then ignore leds_cluster_locality_config and use
// lb_endpoints, as gRPC does with GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false.
var Type = registry.ResourceType{
	TypeURL:      TypeURL,
	Name:         "ClusterLoadAssignment",
	Decoder:      registry.DecoderFunc(decode),
	NameField:    1, // ClusterLoadAssignment.cluster_name
	Dependencies: registry.DependencyFunc(dependencies),
}

// Endpoint is one validated LbEndpoint ([endpoint.Endpoint]); LEDS
// collections hold the same type.
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

// ClusterLoadAssignment is a decoded, validated EDS resource. It must not
// be modified; the engine hands the same value to every watcher.
type ClusterLoadAssignment struct {
	// ClusterName is cluster_name, the resource's name.
	ClusterName string
	// Localities are the entries of endpoints whose load_balancing_weight
	// is set and non-zero, in the order sent; gRPC assigns no load to the
	// others, so they are left out (gRFC A27). Their priorities run from 0
	// without gaps.
	Localities []Locality
	// Drops are policy.drop_overloads, in order.
	Drops []DropOverload

	raw []byte
	// composed is set on values returned by Compose; sources are the LEDS
	// collections they were built from, in locality order.
	composed bool
	sources  []registry.Resource // *leds.LbEndpointCollection or *registry.GlobCollection
}

// LocalityID names a locality.
type LocalityID struct {
	Region, Zone, SubZone string
}

// String formats id for logs and errors.
func (id LocalityID) String() string {
	return "{region=" + strconv.Quote(id.Region) + ", zone=" + strconv.Quote(id.Zone) +
		", sub_zone=" + strconv.Quote(id.SubZone) + "}"
}

// Locality is one weighted group of endpoints within a priority.
type Locality struct {
	ID LocalityID
	// Priority is 0 for the most preferred priority.
	Priority uint32
	// Weight is load_balancing_weight, never 0.
	Weight uint32
	// Endpoints are lb_endpoints, in order, every health status included
	// (see [Endpoint.Usable]). For a locality with an LEDSCollection they
	// are empty until [ClusterLoadAssignment.Compose] fills them in.
	Endpoints []Endpoint
	// LEDSCollection is leds_cluster_locality_config.leds_collection_name
	// when the locality's endpoints live in an LbEndpointCollection
	// (gRFC A95), else "".
	LEDSCollection string
}

// DropOverload is one category of calls the client drops itself.
type DropOverload struct {
	Category string
	// PartsPerMillion is drop_percentage scaled to a denominator of one
	// million and capped there.
	PartsPerMillion uint32
}

// Composed reports whether c came from Compose, so that the Endpoints of
// its LEDS localities are filled in.
func (c *ClusterLoadAssignment) Composed() bool { return c.composed }

// LEDSCollections returns the distinct LEDS collection names the
// localities use, in locality order.
func (c *ClusterLoadAssignment) LEDSCollections() []string {
	var names []string
	for i := range c.Localities {
		n := c.Localities[i].LEDSCollection
		if n == "" || containsString(names, n) {
			continue
		}
		names = append(names, n)
	}
	return names
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Proto returns the resource as an
// *envoy.config.endpoint.v3.ClusterLoadAssignment, decoded afresh from the
// bytes the server sent, so callers may modify it. For a composed value it
// is the resource as sent, without the LEDS endpoints.
func (c *ClusterLoadAssignment) Proto() proto.Message {
	return rawresource.Proto[endpointpb.ClusterLoadAssignment](c.raw)
}

// Equal reports whether other is a *ClusterLoadAssignment that the server
// sent as the same bytes and, for composed values, that was composed from
// equal LEDS collections.
func (c *ClusterLoadAssignment) Equal(other registry.Resource) bool {
	return rawresource.Equal(c, other, func(a, b *ClusterLoadAssignment) bool {
		return a.composed == b.composed && bytes.Equal(a.raw, b.raw) && slices.EqualFunc(a.sources, b.sources, sourceEqual)
	})
}

// sourceEqual compares two LEDS collections a composed value was built
// from: list collections by their bytes, glob collections member by
// member.
func sourceEqual(a, b registry.Resource) bool {
	switch a := a.(type) {
	case *leds.LbEndpointCollection:
		return a.Equal(b)
	case *registry.GlobCollection:
		g, ok := b.(*registry.GlobCollection)
		return ok && a.Name == g.Name && slices.EqualFunc(a.Members, g.Members, func(x, y registry.GlobMember) bool {
			xe, ok := x.Resource.(registry.Equaler)
			return ok && x.Name == y.Name && xe.Equal(y.Resource)
		})
	}
	return false
}

func dependencies(r registry.Resource) []registry.Ref {
	c, ok := r.(*ClusterLoadAssignment)
	if !ok {
		return nil
	}
	var refs []registry.Ref
	for _, n := range c.LEDSCollections() {
		refs = append(refs, ledsRef(n))
	}
	return refs
}

// ledsRef is what a locality's leds_collection_name refers to: a list
// collection (gRFC A95), or a glob collection of LbEndpoint resources
// (xRFC TP1), watched over incremental xDS.
func ledsRef(name string) registry.Ref {
	if xdsname.IsGlob(name) {
		return registry.Ref{TypeURL: leds.EndpointTypeURL, Name: name}
	}
	return registry.Ref{TypeURL: leds.TypeURL, Name: name}
}

// Interface guards.
var (
	_ registry.Equaler  = (*ClusterLoadAssignment)(nil)
	_ registry.Composer = (*ClusterLoadAssignment)(nil)
)

// String summarizes the assignment on one line: each locality with its
// priority, weight, LEDS collection if any, and endpoint addresses.
func (c *ClusterLoadAssignment) String() string {
	var b strings.Builder
	for i, l := range c.Localities {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, "%s p%d w%d", strings.TrimRight(l.ID.Region+"/"+l.ID.Zone+"/"+l.ID.SubZone, "/"), l.Priority, l.Weight)
		if l.LEDSCollection != "" {
			b.WriteString(" (LEDS)")
		}
		b.WriteString(":")
		for _, ep := range l.Endpoints {
			b.WriteString(" " + ep.Address.String())
		}
	}
	for _, d := range c.Drops {
		fmt.Fprintf(&b, " | drop %s %dppm", d.Category, d.PartsPerMillion)
	}
	return b.String()
}
