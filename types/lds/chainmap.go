package lds

import (
	"fmt"
	"net/netip"
	"strings"
)

// chainMap is how gRPC finds a connection's filter chain (gRFC A36, as
// grpc-go's NetworkFilterChainMap and C-core's FilterChainMap build it):
// by destination prefix, then source type, source prefix and source port,
// the most specific entry winning at each level. Building it is also how
// overlapping chains are found: two chains that would land in the same
// final slot match the same connections.
type chainMap struct {
	dests []destEntry
}

type destEntry struct {
	prefix    netip.Prefix // the zero Prefix when the chains set no prefix_ranges
	rawBuffer bool         // a chain here names transport_protocol "raw_buffer"
	bySource  [3][]sourceEntry
}

type sourceEntry struct {
	prefix netip.Prefix // the zero Prefix when the chains set no source_prefix_ranges
	ports  map[uint32]int
}

func (m *chainMap) empty() bool {
	for i := range m.dests {
		if !m.dests[i].empty() {
			return false
		}
	}
	return true
}

func (d *destEntry) empty() bool {
	return len(d.bySource[0]) == 0 && len(d.bySource[1]) == 0 && len(d.bySource[2]) == 0
}

// buildChainMap adds the chains in order, as gRPC does, and records each
// pair of overlapping chains in p. A chain whose match did not parse is
// left out: its own errors are reported.
func buildChainMap(chains []FilterChain, p *problems) chainMap {
	var m chainMap
	reported := map[[2]int]bool{}
	for i := range chains {
		c := &chains[i]
		if !c.matchValid || c.Match.DestinationPort != 0 {
			continue
		}
		dests := c.Match.DestinationPrefixes
		if len(dests) == 0 {
			dests = []netip.Prefix{{}}
		}
		for _, dp := range dests {
			d := m.dest(dp)
			if !d.admits(&c.Match) {
				continue
			}
			srcs := c.Match.SourcePrefixes
			if len(srcs) == 0 {
				srcs = []netip.Prefix{{}}
			}
			for _, sp := range srcs {
				s := d.source(c.Match.SourceType, sp)
				ports := c.Match.SourcePorts
				if len(ports) == 0 {
					ports = []uint32{0}
				}
				for _, port := range ports {
					if j, taken := s.ports[port]; taken {
						if !reported[[2]int{j, i}] {
							reported[[2]int{j, i}] = true
							field, slot := fmt.Sprintf("filter_chains[%d].filter_chain_match", i), describeSlot(dp, c.Match.SourceType, sp, port)
							if j == i {
								p.addf(field, "matches %s twice", slot)
							} else {
								p.addf(field, "overlaps filter_chains[%d]%s: both match %s", j, quoteName(chains[j].Name), slot)
							}
						}
						continue
					}
					s.ports[port] = i
				}
			}
		}
	}
	return m
}

func quoteName(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", name)
}

func describeSlot(dest netip.Prefix, st SourceType, src netip.Prefix, port uint32) string {
	var parts []string
	if dest.IsValid() {
		parts = append(parts, "destination "+dest.String())
	}
	if st != SourceAny {
		parts = append(parts, "source type "+st.String())
	}
	if src.IsValid() {
		parts = append(parts, "source "+src.String())
	}
	if port != 0 {
		parts = append(parts, fmt.Sprintf("source port %d", port))
	}
	if len(parts) == 0 {
		return "every connection"
	}
	return "connections with " + strings.Join(parts, ", ")
}

func (m *chainMap) dest(p netip.Prefix) *destEntry {
	for i := range m.dests {
		if m.dests[i].prefix == p {
			return &m.dests[i]
		}
	}
	m.dests = append(m.dests, destEntry{prefix: p})
	return &m.dests[len(m.dests)-1]
}

// admits applies the criteria gRPC decides per destination entry, in
// gRPC's order: server names, then the transport protocol ("raw_buffer"
// is more specific than none, so the first chain naming it evicts the
// chains before it that did not, and later ones without it are ignored),
// then application protocols.
func (d *destEntry) admits(m *FilterChainMatch) bool {
	if len(m.ServerNames) > 0 {
		return false
	}
	switch tp := m.TransportProtocol; {
	case tp != "" && tp != "raw_buffer":
		return false
	case tp == "" && d.rawBuffer:
		return false
	case tp != "" && !d.rawBuffer:
		d.rawBuffer = true
		d.bySource = [3][]sourceEntry{}
	}
	return len(m.ApplicationProtocols) == 0
}

func (d *destEntry) source(st SourceType, p netip.Prefix) *sourceEntry {
	list := &d.bySource[st]
	for i := range *list {
		if (*list)[i].prefix == p {
			return &(*list)[i]
		}
	}
	*list = append(*list, sourceEntry{prefix: p, ports: map[uint32]int{}})
	return &(*list)[len(*list)-1]
}

// FilterChainFor returns the filter chain gRPC selects for a connection
// from remote to the server's local address (gRFC A36): the most
// specific destination prefix, then source type, source prefix and source
// port, each level keeping only the best entry; the default filter chain
// when nothing matches; nil when there is none either, which means the
// connection is closed. IPv4-mapped IPv6 addresses count as IPv4.
func (s *ServerListener) FilterChainFor(local, remote netip.AddrPort) *FilterChain {
	if i, ok := s.chains.find(local.Addr().Unmap(), remote.Addr().Unmap(), remote.Port()); ok {
		return &s.FilterChains[i]
	}
	return s.DefaultFilterChain
}

func (m *chainMap) find(local, remote netip.Addr, port uint16) (int, bool) {
	var best *destEntry
	for i := range m.dests {
		d := &m.dests[i]
		// An entry whose chains were all evicted is skipped, as grpc-go
		// drops it.
		if d.empty() || !prefixMatches(d.prefix, local) {
			continue
		}
		if best == nil || morePrecise(d.prefix, best.prefix) {
			best = d
		}
	}
	if best == nil {
		return 0, false
	}
	st := SourceExternal
	if remote.IsLoopback() || remote == local {
		st = SourceSameIPOrLoopback
	}
	sources := best.bySource[st]
	if len(sources) == 0 {
		sources = best.bySource[SourceAny]
	}
	var src *sourceEntry
	for i := range sources {
		s := &sources[i]
		if !prefixMatches(s.prefix, remote) {
			continue
		}
		if src == nil || morePrecise(s.prefix, src.prefix) {
			src = s
		}
	}
	if src == nil {
		return 0, false
	}
	if i, ok := src.ports[uint32(port)]; ok {
		return i, true
	}
	i, ok := src.ports[0]
	return i, ok
}

// prefixMatches reports whether an entry's prefix matches addr; the zero
// Prefix is the catch-all entry of chains that set no prefix. A prefix
// of length 0 still matches only its address family (gRFC A36).
func prefixMatches(p netip.Prefix, addr netip.Addr) bool {
	return !p.IsValid() || p.Contains(addr)
}

// morePrecise reports whether a matching prefix beats the best so far:
// any prefix beats the catch-all, a longer one a shorter one.
func morePrecise(candidate, best netip.Prefix) bool {
	return candidate.IsValid() && (!best.IsValid() || candidate.Bits() > best.Bits())
}
