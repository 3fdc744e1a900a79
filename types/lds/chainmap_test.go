package lds_test

import (
	"net/netip"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdsengine/xdsengine/types/lds"
)

// decodeServer decodes and validates l, which must be a valid server
// Listener.
func decodeServer(t *testing.T, l *listenerv3.Listener) *lds.ServerListener {
	t.Helper()
	res, err := lds.Type.Decode(marshalServer(serverCase{name: t.Name(), msg: l}), serverOpts)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return res.Resource.(*lds.Listener).Server
}

// TestFilterChainFor finds connections' chains as grpc-go's
// internal/xds/server/filter_chain_manager_test.go TestLookup_Successes,
// TestLookup_Failures and TestLookup_DroppedChainFallback do (their
// listeners and connections; the chain names say what each matches).
func TestFilterChainFor(t *testing.T) {
	named := func(name string, m *listenerv3.FilterChainMatch) *listenerv3.FilterChain { return chain(name, m) }
	withoutDefault := server(nil,
		named("unspecified-dest-and-source-prefix", nil),
		named("wildcard-prefixes-v4", &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{cidr("0.0.0.0", 0)}, SourcePrefixRanges: []*corev3.CidrRange{cidr("0.0.0.0", 0)},
		}),
		named("wildcard-source-prefix-v6", &listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{cidr("::", 0)}}),
		named("specific-destination-prefix-unspecified-source-type", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 16)}}),
		named("specific-destination-prefix-specific-source-type", &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 24)}, SourceType: listenerv3.FilterChainMatch_EXTERNAL,
		}),
		named("specific-destination-prefix-specific-source-type-specific-source-prefix", &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 24)}, SourceType: listenerv3.FilterChainMatch_EXTERNAL,
			SourcePrefixRanges: []*corev3.CidrRange{cidr("192.168.92.1", 24)},
		}),
		named("specific-destination-prefix-specific-source-type-specific-source-prefix-specific-source-port", &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 24)}, SourceType: listenerv3.FilterChainMatch_EXTERNAL,
			SourcePrefixRanges: []*corev3.CidrRange{cidr("192.168.92.1", 24)}, SourcePorts: []uint32{80},
		}),
	)
	withDefault := server(named("default", nil), named("192.168/16", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 16)}}))
	droppedFirst := server(nil,
		named("dropped", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.100.1", 32)}, ServerNames: []string{"foo"}}),
		named("192.168/16", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.100.0", 16)}}),
	)
	for _, c := range []struct {
		name          string
		lis           *listenerv3.Listener
		local, remote string
		want          string // the chain's name; "-" for none
	}{
		{name: "default_filter_chain", lis: withDefault, local: "10.1.1.1:443", remote: "10.9.9.9:1", want: "default"},
		{name: "unspecified_destination_match", lis: withoutDefault, local: "[2001:68::db8]:443", remote: "10.1.1.1:1", want: "unspecified-dest-and-source-prefix"},
		{name: "wildcard_destination_match_v4", lis: withoutDefault, local: "10.1.1.1:443", remote: "10.1.1.1:1", want: "wildcard-prefixes-v4"},
		{name: "wildcard_source_match_v6", lis: withoutDefault, local: "[2001:68::1]:443", remote: "[2001:68::2]:1", want: "wildcard-source-prefix-v6"},
		{name: "specific_destination_and_wildcard_source_type_match", lis: withoutDefault, local: "192.168.100.1:443", remote: "192.168.100.1:80", want: "specific-destination-prefix-unspecified-source-type"},
		{name: "specific_destination_and_source_type_match", lis: withoutDefault, local: "192.168.1.1:443", remote: "10.1.1.1:80", want: "specific-destination-prefix-specific-source-type"},
		{name: "specific_destination_source_type_and_source_prefix", lis: withoutDefault, local: "192.168.1.1:443", remote: "192.168.92.100:70", want: "specific-destination-prefix-specific-source-type-specific-source-prefix"},
		{name: "specific_destination_source_type_source_prefix_and_source_port", lis: withoutDefault, local: "192.168.1.1:443", remote: "192.168.92.100:80", want: "specific-destination-prefix-specific-source-type-specific-source-prefix-specific-source-port"},
		// A loopback source looks among the SAME_IP_OR_LOOPBACK chains,
		// then the ANY ones; the /24 destination has only EXTERNAL
		// chains, and there is no default chain.
		{name: "loopback source falls back to ANY", lis: withoutDefault, local: "192.168.1.1:443", remote: "127.0.0.1:80", want: "-"},
		{name: "IPv4-mapped addresses are IPv4", lis: withoutDefault, local: "[::ffff:10.1.1.1]:443", remote: "[::ffff:10.1.1.1]:1", want: "wildcard-prefixes-v4"},
		// TestLookup_Failures.
		{name: "no_destination_prefix_match", lis: server(nil, named("a", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 16)}})),
			local: "10.1.1.1:443", remote: "10.1.1.2:1", want: "-"},
		{name: "no_source_type_match", lis: server(nil, named("a", &listenerv3.FilterChainMatch{
			PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 16)}, SourceType: listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK,
		})), local: "192.168.100.1:443", remote: "192.168.100.2:1", want: "-"},
		{name: "no_source_prefix_match", lis: server(nil, named("a", &listenerv3.FilterChainMatch{
			SourcePrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 24)}, SourceType: listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK,
		})), local: "192.168.100.1:443", remote: "192.168.100.1:1", want: "-"},
		{name: "no_default_filter_chain", lis: server(nil, named("a", &listenerv3.FilterChainMatch{SourcePorts: []uint32{1, 2, 3}})),
			local: "192.168.100.1:443", remote: "192.168.100.1:80", want: "-"},
		// TestLookup_DroppedChainFallback: a chain gRPC never selects
		// leaves no trace, so the less specific destination serves
		// (grpc-go; C-core keeps the empty /32 entry and closes the
		// connection).
		{name: "dropped chain fallback", lis: droppedFirst, local: "192.168.100.1:443", remote: "192.168.100.1:80", want: "192.168/16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := decodeServer(t, c.lis)
			got := s.FilterChainFor(netip.MustParseAddrPort(c.local), netip.MustParseAddrPort(c.remote))
			name := "-"
			if got != nil {
				name = got.Name
			}
			if name != c.want {
				t.Errorf("FilterChainFor(%s, %s) = %q, want %q", c.local, c.remote, name, c.want)
			}
		})
	}
}
