package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"strings"
	"time"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func main() {
	log.SetFlags(0)
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

const listenAddr = "0.0.0.0:50051"

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	mgmt, err := xdstest.Start(xdstest.Options{Name: "istiod"})
	if err != nil {
		return err
	}
	defer mgmt.Close()

	// The bootstrap a proxyless server gets: where the control plane is,
	// how to name its Listener, and where its certificates come from.
	bs, err := bootstrap.Parse(mgmt.Bootstrap(xdstest.BootstrapOptions{
		ServerListenerResourceNameTemplate: "xds.istio.io/grpc/lds/inbound/%s",
		CertificateProviders: map[string]bootstrap.CertificateProvider{"default": {PluginName: "file_watcher", Config: json.RawMessage(
			`{"certificate_file": "/var/run/certs/cert-chain.pem", "private_key_file": "/var/run/certs/key.pem", "ca_certificate_file": "/var/run/certs/root-cert.pem"}`)}},
	}))
	if err != nil {
		return err
	}
	name, err := bs.ServerListenerName(listenAddr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening on %s: watching Listener %q\n", listenAddr, name)

	mgmt.Set(
		xdstest.R(name, serverListener(name, "default")),
		xdstest.R("public-routes", xdstest.RouteConfig("public-routes", "legacy-backend")),
	)
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		return err
	}
	defer e.Close()

	type delivery struct {
		g   *graph.Graph
		err error
	}
	graphs := make(chan delivery, 4)
	stop := graph.Watch(e, registry.Ref{TypeURL: lds.TypeURL, Name: name}, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		defer done()
		graphs <- delivery{g, err}
	}))
	defer stop()
	next := func() (*graph.Graph, error) {
		select {
		case d := <-graphs:
			return d.g, d.err
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the server's configuration: %w", ctx.Err())
		}
	}

	g, err := next()
	if err != nil {
		return err
	}
	l := g.Node(g.Root).Resource.(*lds.Listener)
	if !l.IsServer() || l.Server.Addr() != listenAddr {
		return fmt.Errorf("the Listener %q is not a server's on %s: %v", name, listenAddr, l)
	}
	printServer(out, l.Server)

	local := netip.MustParseAddrPort("10.0.0.7:50051")
	for _, peer := range []string{"127.0.0.1:40001", "10.4.0.2:40002", "198.51.100.23:40003"} {
		fmt.Fprintf(out, "connection from %s gets chain %q\n", peer, l.Server.FilterChainFor(local, netip.MustParseAddrPort(peer)).Name)
	}

	// The control plane names a provider the bootstrap does not define:
	// gRPC NACKs that, and so does the engine (gRFC A29). The server
	// keeps serving with what it has.
	mgmt.Set(
		xdstest.R(name, serverListener(name, "vault")),
		xdstest.R("public-routes", xdstest.RouteConfig("public-routes", "legacy-backend")),
	)
	for {
		g, err = next()
		if err != nil {
			return err
		}
		if ambient := g.Node(g.Root).Ambient; ambient != nil {
			fmt.Fprintf(out, "update rejected: %v\n", ambient)
			kept := g.Node(g.Root).Resource.(*lds.Listener)
			fmt.Fprintf(out, "still serving: %v\n", kept)
			return nil
		}
	}
}

// serverListener is the server's Listener: mTLS and RBAC for the mesh,
// plaintext for the node, TLS for the rest, certificates from provider.
func serverListener(name, provider string) *listenerpb.Listener {
	echoClients := &rbacpb.RBAC{Action: rbacpb.RBAC_ALLOW, Policies: map[string]*rbacpb.Policy{
		"echo-clients": {
			Permissions: []*rbacpb.Permission{{Rule: &rbacpb.Permission_UrlPath{UrlPath: &matcherpb.PathMatcher{
				Rule: &matcherpb.PathMatcher_Path{Path: &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: "/echo.Echo/"}}},
			}}}},
			Principals: []*rbacpb.Principal{{Identifier: &rbacpb.Principal_Authenticated_{Authenticated: &rbacpb.Principal_Authenticated{
				PrincipalName: &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "spiffe://cluster.local/ns/default/sa/echo-client"}},
			}}}},
		},
	}}
	return xdstest.ServerListener(name, listenAddr, []xdstest.FilterChain{
		{Name: "mesh", SourcePrefixes: []string{"10.0.0.0/8"}, RBAC: echoClients,
			TLS: &xdstest.TLS{Identity: "default", Root: "default", RequireClientCertificate: true}},
		{Name: "node", SourceType: listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK},
	}, &xdstest.FilterChain{Name: "public", RouteConfig: "public-routes", TLS: &xdstest.TLS{Identity: provider}})
}

func printServer(out io.Writer, s *lds.ServerListener) {
	chains := make([]*lds.FilterChain, 0, len(s.FilterChains)+1)
	for i := range s.FilterChains {
		chains = append(chains, &s.FilterChains[i])
	}
	if s.DefaultFilterChain != nil {
		chains = append(chains, s.DefaultFilterChain)
	}
	for _, c := range chains {
		fmt.Fprintf(out, "chain %q\n", c.Name)
		fmt.Fprintf(out, "  matches: %s\n", describeMatch(c, c == s.DefaultFilterChain))
		fmt.Fprintf(out, "  tls: %s\n", describeTLS(c.TLS))
		for _, f := range c.HTTP.HTTPFilters {
			if f.RBAC != nil {
				fmt.Fprintf(out, "  rbac %q: %s\n", f.Name, describeRBAC(f.RBAC))
			}
		}
		routes := "inline"
		if c.HTTP.RouteConfigName != "" {
			routes = "RDS " + c.HTTP.RouteConfigName
		}
		fmt.Fprintf(out, "  routes (%s): %v\n", routes, c.HTTP.RouteConfig)
		if err := c.HTTP.RouteConfig.CheckServerUse(); err != nil {
			fmt.Fprintf(out, "  warning: %v\n", err)
		}
	}
}

func describeMatch(c *lds.FilterChain, isDefault bool) string {
	if isDefault {
		return "connections no other chain matches"
	}
	m := c.Match
	var parts []string
	if len(m.SourcePrefixes) > 0 {
		parts = append(parts, fmt.Sprintf("peers in %v", m.SourcePrefixes))
	}
	if m.SourceType != lds.SourceAny {
		parts = append(parts, "source type "+m.SourceType.String())
	}
	if len(parts) == 0 {
		return "every connection"
	}
	return strings.Join(parts, ", ")
}

func describeTLS(t *lds.DownstreamTLS) string {
	switch {
	case t == nil:
		return "plaintext"
	case t.RootCerts == nil:
		return fmt.Sprintf("TLS, certificate from provider %q", t.IdentityCerts.InstanceName)
	case t.RequireClientCertificate:
		return fmt.Sprintf("mutual TLS, certificate from provider %q, client certificates required, checked with CA from %q",
			t.IdentityCerts.InstanceName, t.RootCerts.InstanceName)
	}
	return fmt.Sprintf("TLS, certificate from provider %q, client certificates checked with CA from %q", t.IdentityCerts.InstanceName, t.RootCerts.InstanceName)
}

func describeRBAC(r *lds.RBAC) string {
	if r.Rules == nil {
		return "enforces nothing"
	}
	var policies []string
	for _, p := range r.Rules.Policies {
		policies = append(policies, fmt.Sprintf("%s %q when %s by %s", r.Rules.Action, p.Name, describeRules(p.Permissions), describeRules(p.Principals)))
	}
	return strings.Join(policies, "; ")
}

func describeRules(rules []lds.RBACRule) string {
	var out []string
	for _, r := range rules {
		switch r.Kind {
		case lds.RuleURLPath:
			out = append(out, fmt.Sprintf("path %s %q", kindName(r.String.Kind), r.String.Pattern))
		case lds.RuleAuthenticated:
			if r.String == nil {
				out = append(out, "any authenticated peer")
			} else {
				out = append(out, fmt.Sprintf("peer %q", r.String.Pattern))
			}
		default:
			out = append(out, r.Kind.String())
		}
	}
	return strings.Join(out, " or ")
}
