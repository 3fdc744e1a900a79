package lds_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/lds"
)

// FuzzDecode checks that decoding never panics and that the same bytes
// always give the same name, error and dependencies.
func FuzzDecode(f *testing.F) {
	for _, c := range allCases() {
		f.Add(marshal(c))
	}
	for _, c := range allServerCases() {
		f.Add(marshalServer(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, problem, _ := registrytest.DecodeTwice(lds.Type, raw, registry.DecodeOptions{}); problem != "" {
			t.Fatal(problem)
		}
	})
}

// FuzzServerListener decodes server Listeners and, for the valid ones,
// looks up the filter chain of a connection: the chain found must be one
// gRPC can select whose every criterion holds for the connection, or the
// default chain.
func FuzzServerListener(f *testing.F) {
	for _, c := range allServerCases() {
		f.Add(marshalServer(c), []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}, uint16(80))
		f.Add(marshalServer(c), []byte{192, 168, 1, 1}, []byte{127, 0, 0, 1}, uint16(0))
	}
	f.Fuzz(func(t *testing.T, raw, localIP, remoteIP []byte, port uint16) {
		res, problem, err := registrytest.DecodeTwice(lds.Type, raw, serverOpts)
		if problem != "" {
			t.Fatal(problem)
		}
		l, _ := res.Resource.(*lds.Listener)
		if err != nil || l == nil || l.Server == nil {
			return
		}
		local, ok1 := netip.AddrFromSlice(localIP)
		remote, ok2 := netip.AddrFromSlice(remoteIP)
		if !ok1 || !ok2 {
			return
		}
		s := l.Server
		got := s.FilterChainFor(netip.AddrPortFrom(local, 443), netip.AddrPortFrom(remote, port))
		if got == nil || got == s.DefaultFilterChain {
			return
		}
		if !isElement(s.FilterChains, got) {
			t.Fatalf("FilterChainFor returned %p, not one of the Listener's chains", got)
		}
		if why := checkMatches(got.Match, local.Unmap(), remote.Unmap(), port); why != "" {
			t.Fatalf("FilterChainFor(%s, %s:%d) = chain %q, which does not match: %s", local, remote, port, got.Name, why)
		}
	})
}

func isElement(chains []lds.FilterChain, c *lds.FilterChain) bool {
	for i := range chains {
		if &chains[i] == c {
			return true
		}
	}
	return false
}

// checkMatches says which criterion of m a connection fails, or "".
func checkMatches(m lds.FilterChainMatch, local, remote netip.Addr, port uint16) string {
	contains := func(prefixes []netip.Prefix, a netip.Addr) bool {
		return len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	sameOrLoopback := remote.IsLoopback() || remote == local
	switch {
	case m.Unmatchable() != "":
		return "unmatchable: " + m.Unmatchable()
	case !contains(m.DestinationPrefixes, local):
		return "destination prefixes"
	case !contains(m.SourcePrefixes, remote):
		return "source prefixes"
	case len(m.SourcePorts) > 0 && !slices.Contains(m.SourcePorts, uint32(port)):
		return "source ports"
	case m.SourceType == lds.SourceSameIPOrLoopback && !sameOrLoopback, m.SourceType == lds.SourceExternal && sameOrLoopback:
		return "source type " + m.SourceType.String()
	}
	return ""
}
