package lds

import (
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/typedconfig"
)

// FilterChain is one filter chain of a server's Listener: the match that
// selects it for a connection, the connection's TLS settings and its one
// network filter, an HttpConnectionManager.
type FilterChain struct {
	// Name is the chain's name, for logs; it may be empty.
	Name  string
	Match FilterChainMatch
	// HTTP is the chain's HttpConnectionManager.
	HTTP HTTPConnectionManager
	// TLS is the DownstreamTlsContext of transport_socket, or nil when
	// the chain sets no transport socket: the server then uses its
	// fallback credentials (gRFC A29).
	TLS *DownstreamTLS

	problems problems
	// hcmField is the path of the HttpConnectionManager within the chain,
	// "" when there is none to validate.
	hcmField string
	// matchValid is set when the match criteria parse, so that the chain
	// takes part in the search for overlaps.
	matchValid bool
}

// SourceType is FilterChainMatch.source_type.
type SourceType int

// Source types, with the values of envoy's ConnectionSourceType.
const (
	// SourceAny matches every connection.
	SourceAny SourceType = iota
	// SourceSameIPOrLoopback matches connections from a loopback address
	// or from the listening address itself.
	SourceSameIPOrLoopback
	// SourceExternal matches the other connections.
	SourceExternal
)

var sourceTypeNames = [...]string{"ANY", "SAME_IP_OR_LOOPBACK", "EXTERNAL"}

// String returns the proto's name for t.
func (t SourceType) String() string {
	if t < 0 || int(t) >= len(sourceTypeNames) {
		return fmt.Sprintf("SourceType(%d)", int(t))
	}
	return sourceTypeNames[t]
}

// FilterChainMatch is a filter chain's filter_chain_match. Prefix ranges
// are normalized as gRFC A36 asks: an absent prefix_len is 0, a length
// beyond the address's bits is cut to them, and the address is masked.
type FilterChainMatch struct {
	// DestinationPort is destination_port; 0 when unset.
	DestinationPort uint32
	// DestinationPrefixes are prefix_ranges, matched against the local
	// address; empty matches any.
	DestinationPrefixes []netip.Prefix
	SourceType          SourceType
	// SourcePrefixes are source_prefix_ranges, matched against the peer's
	// address; empty matches any.
	SourcePrefixes []netip.Prefix
	// SourcePorts are source_ports; empty matches any.
	SourcePorts          []uint32
	ServerNames          []string
	TransportProtocol    string
	ApplicationProtocols []string
}

// Unmatchable says why gRPC never selects a chain with this match, or ""
// when it may. gRPC implements neither the original destination nor
// listener filters, so criteria that depend on them never hold (gRFC
// A36): destination_port, server_names, application_protocols, and a
// transport_protocol other than "raw_buffer".
func (m *FilterChainMatch) Unmatchable() string {
	switch {
	case m.DestinationPort != 0:
		return "destination_port is set"
	case len(m.ServerNames) > 0:
		return "server_names is set"
	case m.TransportProtocol != "" && m.TransportProtocol != "raw_buffer":
		return fmt.Sprintf("transport_protocol is %q", m.TransportProtocol)
	case len(m.ApplicationProtocols) > 0:
		return "application_protocols is set"
	}
	return ""
}

// convertChain converts one filter chain. As in C-core, every chain is
// held to the rules, those gRPC never selects included. It fails only for
// embedded messages that do not parse.
func convertChain(fc *listenerv3.FilterChain) (FilterChain, error) {
	c := FilterChain{Name: fc.GetName()}
	c.matchValid = convertMatch(fc.GetFilterChainMatch(), &c.Match, &c.problems)

	// gRFC A36: the network filters must end in exactly one
	// HttpConnectionManager; gRPC implements no other network filter, so
	// that is the only filter.
	filters := fc.GetFilters()
	if len(filters) != 1 {
		c.problems.addf("filters", "must have exactly one filter, an HttpConnectionManager (gRPC implements no other network filter), found %d", len(filters))
	}
	names := make(map[string]bool, len(filters))
	for k, f := range filters {
		if name := f.GetName(); name != "" {
			if names[name] {
				c.problems.addf(fmt.Sprintf("filters[%d].name", k), "duplicate filter name %q", name)
			}
			names[name] = true
		}
		at := fmt.Sprintf("filters[%d].typed_config", k)
		tc := f.GetTypedConfig()
		switch {
		case tc == nil:
			c.problems.add(at, "field not present")
		case !isHCMType(tc.GetTypeUrl()):
			inner, err := typedconfig.TypeURL(tc)
			switch {
			case err != nil:
				return c, &registry.FieldError{Field: at, Rule: err.Error()}
			case isHCMType(inner):
				c.problems.add(at, "an HttpConnectionManager in a TypedStruct cannot be read: gRPC needs the message")
			default:
				c.problems.addf(at, "unsupported network filter type %q: gRPC implements only %s", tc.GetTypeUrl(), hcmMessage)
			}
		case c.hcmField == "":
			h, err := convertHCM(tc.GetValue(), true)
			if err != nil {
				return c, registry.FieldWithin(at, err)
			}
			c.HTTP, c.hcmField = h, at
		}
	}

	if ts := fc.GetTransportSocket(); ts != nil {
		tls, err := convertTLS(ts, &c.problems)
		if err != nil {
			return c, registry.FieldWithin("transport_socket", err)
		}
		c.TLS = tls
	}
	return c, nil
}

// convertMatch fills out from m and reports whether it parsed.
func convertMatch(m *listenerv3.FilterChainMatch, out *FilterChainMatch, p *problems) bool {
	if m == nil {
		return true
	}
	before := len(*p)
	out.DestinationPort = m.GetDestinationPort().GetValue()
	out.DestinationPrefixes = convertCIDRs(m.GetPrefixRanges(), "filter_chain_match.prefix_ranges", p)
	out.SourceType = SourceType(m.GetSourceType())
	if out.SourceType < SourceAny || out.SourceType > SourceExternal {
		p.addf("filter_chain_match.source_type", "unsupported source type %d", int(out.SourceType))
	}
	out.SourcePrefixes = convertCIDRs(m.GetSourcePrefixRanges(), "filter_chain_match.source_prefix_ranges", p)
	out.SourcePorts = m.GetSourcePorts()
	out.ServerNames = m.GetServerNames()
	out.TransportProtocol = m.GetTransportProtocol()
	out.ApplicationProtocols = m.GetApplicationProtocols()
	return len(*p) == before
}

// convertCIDRs normalizes prefix ranges as gRFC A36 and C-core do: the
// length is cut to the address's bits rather than rejected, as grpc-go
// does.
func convertCIDRs(ranges []*corev3.CidrRange, at string, p *problems) []netip.Prefix {
	if len(ranges) == 0 {
		return nil
	}
	out := make([]netip.Prefix, 0, len(ranges))
	for j, r := range ranges {
		addr, err := netip.ParseAddr(r.GetAddressPrefix())
		if err != nil || addr.Zone() != "" {
			p.addf(fmt.Sprintf("%s[%d].address_prefix", at, j), "invalid IP address %q", r.GetAddressPrefix())
			continue
		}
		bits := int(min(r.GetPrefixLen().GetValue(), uint32(addr.BitLen())))
		prefix, _ := addr.Prefix(bits) // bits is in range, so this cannot fail
		out = append(out, prefix)
	}
	return out
}
