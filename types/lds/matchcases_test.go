package lds_test

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/types/lds"
)

// matchCases are about filter_chain_match: normalization, the chains gRPC
// never selects, and overlapping criteria, which gRFC A36 has NACKed
// naming both chains.
func matchCases() []serverCase {
	match := func(m *listenerv3.FilterChainMatch) *listenerv3.FilterChain { return chain("", m) }
	return []serverCase{
		{
			name: "C-core DuplicateMatchOnDestinationPrefixRanges",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("1.2.3.4", 24), cidr("1.2.3.4", 16)}}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("1.2.3.4", 24), cidr("1.2.3.4", 32)}})),
			wantErr: "filter_chains[1].filter_chain_match: overlaps filter_chains[0]: both match connections with destination 1.2.3.0/24",
		},
		{
			name: "C-core DuplicateMatchOnTransportProtocol",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer"}),
				match(&listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer"})),
			wantErr: "filter_chains[1].filter_chain_match: overlaps filter_chains[0]: both match every connection",
		},
		{
			name: "C-core DuplicateMatchOnSourceType",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK}),
				match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK})),
			wantErr: "filter_chains[1].filter_chain_match: overlaps filter_chains[0]: both match connections with source type SAME_IP_OR_LOOPBACK",
		},
		{
			name: "C-core DuplicateMatchOnSourcePrefixRanges",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{cidr("1.2.3.4", 24), cidr("1.2.3.4", 16)}}),
				match(&listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{cidr("1.2.3.4", 24), cidr("1.2.3.4", 32)}})),
			wantErr: "filter_chains[1].filter_chain_match: overlaps filter_chains[0]: both match connections with source 1.2.3.0/24",
		},
		{
			name: "C-core DuplicateMatchOnSourcePort",
			msg: server(nil,
				chain("a", &listenerv3.FilterChainMatch{SourcePorts: []uint32{8080}}),
				chain("b", &listenerv3.FilterChainMatch{SourcePorts: []uint32{8080}})),
			wantErr: `filter_chains[1].filter_chain_match: overlaps filter_chains[0] ("a"): both match connections with source port 8080`,
		},
		{
			// Also grpc-go lds "overlapping filter chain match criteria".
			name: "grpc-go fc OverlappingMatchingRules/matching source ports",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{SourcePorts: []uint32{1, 2, 3, 4, 5}}),
				match(&listenerv3.FilterChainMatch{}),
				match(&listenerv3.FilterChainMatch{SourcePorts: []uint32{5, 6, 7}})),
			wantErr: "filter_chains[2].filter_chain_match: overlaps filter_chains[0]: both match connections with source port 5",
		},
		{
			name: "grpc-go fc OverlappingMatchingRules/matching destination prefixes with no other matchers",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 16), cidr("10.0.0.0", 0)}}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.2.2", 16)}})),
			wantErr: "filter_chains[1].filter_chain_match: overlaps filter_chains[0]: both match connections with destination 192.168.0.0/16",
		},
		{
			name: "grpc-go fc OverlappingMatchingRules/matching source type",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_ANY}),
				match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK}),
				match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_EXTERNAL}),
				match(&listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_EXTERNAL})),
			wantErr: "filter_chains[3].filter_chain_match: overlaps filter_chains[2]: both match connections with source type EXTERNAL",
		},
		{
			name: "grpc-go fc OverlappingMatchingRules/matching source prefixes",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 16), cidr("10.0.0.0", 0)}}),
				match(&listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{cidr("192.168.2.2", 16)}})),
			wantErr: "filter_chains[1].filter_chain_match: overlaps filter_chains[0]: both match connections with source 192.168.0.0/16",
		},
		{
			// grpc-go fc FilterChains_FailureCases/bad dest prefix length:
			// grpc-go rejects a length beyond the address's bits, gRFC A36
			// and C-core cut it to them. A36 and C-core are followed.
			name: "grpc-go fc bad dest prefix length is cut to 32",
			msg:  server(nil, match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("10.1.1.7", 50)}, SourcePrefixRanges: []*corev3.CidrRange{cidr("::1", 200)}})),
			check: func(t *testing.T, s *lds.ServerListener) {
				m := s.FilterChains[0].Match
				if m.DestinationPrefixes[0].String() != "10.1.1.7/32" || m.SourcePrefixes[0].String() != "::1/128" {
					t.Errorf("prefixes = %v from %v, want 10.1.1.7/32 from ::1/128", m.DestinationPrefixes, m.SourcePrefixes)
				}
			},
		},
		{
			// gRFC A36: an absent prefix_len is 0, and unused low bits are
			// ignored; a /0 still names an address family.
			name: "prefix normalized",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "10.9.8.7"}}}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{{AddressPrefix: "::"}}})),
			check: func(t *testing.T, s *lds.ServerListener) {
				if got := s.FilterChains[0].Match.DestinationPrefixes[0].String(); got != "0.0.0.0/0" {
					t.Errorf("prefix = %s, want 0.0.0.0/0", got)
				}
			},
		},
		{
			name:    "zoned prefix address",
			msg:     server(nil, match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("fe80::1%eth0", 64)}})),
			wantErr: `filter_chains[0].filter_chain_match.prefix_ranges[0].address_prefix: invalid IP address "fe80::1%eth0"`,
		},
		{
			name:    "unknown source type",
			msg:     server(nil, match(&listenerv3.FilterChainMatch{SourceType: 7})),
			wantErr: "filter_chains[0].filter_chain_match.source_type: unsupported source type 7",
		},
		{
			// grpc-go fc Success_AllCombinations/some chains have
			// unsupported fields: the raw_buffer chain for 10.0.0.0/8
			// evicts the one without a transport protocol, which would
			// otherwise be distinct anyway; the chains with server names,
			// another transport protocol or application protocols are
			// never selected.
			name: "grpc-go fc some chains have unsupported fields",
			msg: server(chain("default", nil),
				match(&listenerv3.FilterChainMatch{}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.1.1", 16)}}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 8)}, TransportProtocol: "raw_buffer"}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 8)},
					SourceType: listenerv3.FilterChainMatch_EXTERNAL, SourcePrefixRanges: []*corev3.CidrRange{cidr("10.0.0.0", 16)}}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.100.1", 32)}, ServerNames: []string{"foo", "bar"}}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.100.2", 32)}, TransportProtocol: "not-raw-buffer"}),
				match(&listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{cidr("192.168.100.3", 32)}, ApplicationProtocols: []string{"h2"}}),
			),
			check: func(t *testing.T, s *lds.ServerListener) {
				for i, want := range []string{"", "", "", "", "server_names is set", `transport_protocol is "not-raw-buffer"`, "application_protocols is set"} {
					if got := s.FilterChains[i].Match.Unmatchable(); got != want {
						t.Errorf("chain %d Unmatchable() = %q, want %q", i, got, want)
					}
				}
			},
		},
		{
			// The chains gRPC never selects are still held to the rules,
			// as C-core does; grpc-go drops them unexamined.
			name:    "unmatchable chain still validated",
			msg:     server(chain("default", nil), &listenerv3.FilterChain{FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(80)}}),
			wantErr: "filter_chains[0].filters: must have exactly one filter",
		},
		{
			// Unmatchable chains take no part in the search for overlaps,
			// as in both implementations.
			name: "unmatchable chains do not overlap",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{}),
				match(&listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(80)}),
				match(&listenerv3.FilterChainMatch{ServerNames: []string{"a"}})),
		},
		{
			// Order matters as in gRPC: the second chain without a
			// transport protocol is ignored once a raw_buffer chain took
			// the destination, so it overlaps nothing.
			name: "raw_buffer first hides later duplicates",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer"}),
				match(&listenerv3.FilterChainMatch{}),
				match(&listenerv3.FilterChainMatch{})),
		},
		{
			name: "duplicates before raw_buffer overlap",
			msg: server(nil,
				match(&listenerv3.FilterChainMatch{}),
				match(&listenerv3.FilterChainMatch{}),
				match(&listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer"})),
			wantErr: "filter_chains[1].filter_chain_match: overlaps filter_chains[0]: both match every connection",
		},
		{
			name:    "same source port listed twice in one chain",
			msg:     server(nil, match(&listenerv3.FilterChainMatch{SourcePorts: []uint32{9, 9}})),
			wantErr: "filter_chains[0].filter_chain_match: matches connections with source port 9 twice",
		},
	}
}
