package lds

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdsengine/xdsengine/registry"
)

// ServerListener is the server side of a Listener (gRFC A36): the address
// a gRPC server listens on and the filter chains that configure each
// connection it accepts, with their TLS settings (gRFC A29), HTTP filters
// (gRFC A39, RBAC per A41) and routes.
type ServerListener struct {
	// Host and Port are address.socket_address's address and port_value.
	// gRFC A36 has a server serve only when they match its listening
	// address; [ServerListener.Addr] joins them.
	Host string
	Port uint32
	// FilterChains are filter_chains in order, including those gRPC never
	// selects (see [FilterChainMatch.Unmatchable]).
	FilterChains []FilterChain
	// DefaultFilterChain is default_filter_chain: the chain of a
	// connection no filter chain matches. Nil means such a connection is
	// closed.
	DefaultFilterChain *FilterChain

	problems problems
	// chains finds a connection's filter chain, as gRPC does.
	chains chainMap
}

// Addr returns the listening address as "host:port", an IPv6 host in
// brackets.
func (s *ServerListener) Addr() string {
	return net.JoinHostPort(s.Host, strconv.FormatUint(uint64(s.Port), 10))
}

// String summarizes the listener on one line: its address and, for each
// filter chain, its name, TLS mode and routes.
func (s *ServerListener) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %s:", s.Addr())
	describe := func(label string, c *FilterChain) {
		fmt.Fprintf(&b, " %s", label)
		if c.Name != "" {
			fmt.Fprintf(&b, " %q", c.Name)
		}
		b.WriteString(" (")
		b.WriteString(c.TLS.mode())
		if why := c.Match.Unmatchable(); why != "" {
			b.WriteString(", never matched: " + why)
		}
		b.WriteString(") ")
		h := &c.HTTP
		switch {
		case h.RouteConfigName != "":
			b.WriteString("RDS " + h.RouteConfigName)
		case h.RouteConfig != nil:
			b.WriteString("inline routes")
		}
		b.WriteByte(';')
	}
	for i := range s.FilterChains {
		describe(fmt.Sprintf("chain[%d]", i), &s.FilterChains[i])
	}
	if s.DefaultFilterChain != nil {
		describe("default", s.DefaultFilterChain)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// convertServer converts a Listener without api_listener. It fails only
// for embedded messages that do not parse.
func convertServer(m *listenerv3.Listener) (*ServerListener, error) {
	s := &ServerListener{}
	convertAddress(m.GetAddress(), s)
	// gRFC A36: gRPC implements neither listener filters nor the
	// original destination, so a Listener that needs them is rejected.
	if n := len(m.GetListenerFilters()); n > 0 {
		s.problems.addf("listener_filters", "not supported: gRPC runs no listener filters, found %d", n)
	}
	if m.GetUseOriginalDst().GetValue() {
		s.problems.add("use_original_dst", "field not supported")
	}
	if n := len(m.GetFilterChains()); n > 0 {
		s.FilterChains = make([]FilterChain, n)
	}
	for i, fc := range m.GetFilterChains() {
		c, err := convertChain(fc)
		if err != nil {
			return nil, registry.FieldWithin(fmt.Sprintf("filter_chains[%d]", i), err)
		}
		s.FilterChains[i] = c
	}
	if dfc := m.GetDefaultFilterChain(); dfc != nil {
		c, err := convertChain(dfc)
		if err != nil {
			return nil, registry.FieldWithin("default_filter_chain", err)
		}
		s.DefaultFilterChain = &c
	}
	s.chains = buildChainMap(s.FilterChains, &s.problems)
	if s.DefaultFilterChain == nil {
		// C-core asks for a default chain when there is no chain at all;
		// grpc-go also when no chain can ever be matched, which is the
		// same mistake and rejected here too.
		switch {
		case len(s.FilterChains) == 0:
			s.problems.add("default_filter_chain", "must be set if filter_chains is unset")
		case s.chains.empty() && allMatchesValid(s.FilterChains):
			// A chain whose match does not parse has errors of its own.
			s.problems.add("default_filter_chain", "must be set: no filter chain can be matched (each sets destination_port, server_names, application_protocols or a transport_protocol other than raw_buffer)")
		}
	}
	return s, nil
}

func allMatchesValid(chains []FilterChain) bool {
	for i := range chains {
		if !chains[i].matchValid {
			return false
		}
	}
	return true
}

// convertAddress applies C-core's rules for the address: a TCP socket
// address with a port that fits in 16 bits.
func convertAddress(a *corev3.Address, s *ServerListener) {
	switch {
	case a == nil:
		s.problems.add("address", "field not present: a Listener needs an address (a server's) or an api_listener (a client's)")
		return
	case a.GetSocketAddress() == nil:
		s.problems.add("address.socket_address", "field not present")
		return
	}
	sa := a.GetSocketAddress()
	if sa.GetProtocol() != corev3.SocketAddress_TCP {
		s.problems.add("address.socket_address.protocol", "value must be TCP")
	}
	s.Host = sa.GetAddress()
	if p := sa.GetPortValue(); p > 65535 {
		s.problems.addf("address.socket_address.port_value", "invalid port %d: must be at most 65535", p)
	} else {
		s.Port = p
	}
}

// validateServer reports the problems found while converting and applies
// the rules that depend on opts: inline routes, HTTP filters and
// certificate provider names.
func (v validator) validateServer(s *ServerListener, opts registry.DecodeOptions, errs *registry.FieldErrors) {
	s.problems.reportTo("", errs)
	for i := range s.FilterChains {
		v.validateChain(&s.FilterChains[i], fmt.Sprintf("filter_chains[%d]", i), opts, errs)
	}
	if s.DefaultFilterChain != nil {
		v.validateChain(s.DefaultFilterChain, "default_filter_chain", opts, errs)
	}
}

func (v validator) validateChain(c *FilterChain, at string, opts registry.DecodeOptions, errs *registry.FieldErrors) {
	c.problems.reportTo(at, errs)
	if c.hcmField != "" {
		v.validateHCM(&c.HTTP, at+"."+c.hcmField, true, opts, errs)
	}
	if c.TLS != nil {
		c.TLS.checkProviders(at, opts, errs)
	}
}
