package xdsgrpc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
)

// xdsResolver is one channel's resolver: a graph watch from the
// channel's Listener, over the channel's view of the source, turned into
// a configuration for the balancer at every change.
type xdsResolver struct {
	cc        resolver.ClientConn
	env       *env
	view      *channelView
	authority string
	sc        *serviceconfig.ParseResult
	binding   *binding // nil when the channel has no interceptors
	cancel    func()
	release   func()

	mu     sync.Mutex
	closed bool
	good   bool // a configuration reached the channel
}

func (b *Builder) build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions, bd *binding) (resolver.Resolver, error) {
	tgt := target.URL.String()
	listener, err := b.listenerName(tgt, target)
	if err != nil {
		// UNAVAILABLE: grpc-go fails RPCs with the status a resolver
		// fails with, and turns INVALID_ARGUMENT into INTERNAL (gRFC A54).
		return nil, status.Errorf(codes.Unavailable, "xdsgrpc: %v", err)
	}
	authority := opts.Authority
	if authority == "" {
		authority = target.Endpoint()
	}
	src, reporter, release, err := b.acquire(tgt)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "xdsgrpc: %v", err)
	}
	view, err := newChannelView(src, authority)
	if err != nil {
		release()
		return nil, status.Errorf(codes.Unavailable, "xdsgrpc: %v", err)
	}
	sc := cc.ParseServiceConfig(`{"loadBalancingConfig":[{"` + BalancerName + `":{}}]}`)
	if sc.Err != nil {
		release()
		return nil, status.Errorf(codes.Unavailable, "xdsgrpc: %v", sc.Err)
	}
	r := &xdsResolver{
		cc: cc, view: view, authority: authority, sc: sc, binding: bd, release: release,
		env: &env{
			clock: b.clock, failover: b.failover, custom: b.custom, filters: b.filters,
			lrs: reporter, logger: b.logger, channelID: rand.Uint64(), target: tgt,
		},
	}
	root := registry.Ref{TypeURL: lds.TypeURL, Name: listener}
	r.cancel = graph.Watch(view, root, r)
	return r, nil
}

// OnGraphChanged hands the channel each new configuration; done, called
// once the channel has it, lets the source read its next response.
func (r *xdsResolver) OnGraphChanged(g *graph.Graph, err error, done func()) {
	defer done()
	r.mu.Lock()
	closed, good := r.closed, r.good
	r.mu.Unlock()
	if closed {
		return
	}
	if err != nil {
		if !good && status.Code(err) == codes.Unavailable {
			// No configuration yet and the servers cannot be reached:
			// the channel is in TRANSIENT_FAILURE, and wait-for-ready
			// RPCs wait for a configuration.
			// Plain text: grpc-go fails even wait-for-ready RPCs on
			// an error that carries a status.
			r.cc.ReportError(errors.New(err.Error()))
			if r.binding != nil {
				r.binding.resolved()
			}
			return
		}
		// A resource error of the Listener or its RouteConfiguration:
		// stop using them (gRFC A88).
		r.push(failingConfig(r.env, err))
		return
	}
	r.push(buildConfig(r.env, g, r.view, r.authority))
}

func (r *xdsResolver) push(cfg *channelConfig) {
	if r.binding != nil {
		r.binding.set(cfg)
	}
	if err := r.cc.UpdateState(resolver.State{ServiceConfig: r.sc, Attributes: attributes.New(configKey{}, cfg)}); err != nil {
		r.env.logger.Warn("xdsgrpc: the channel did not take the configuration", "target", r.env.target, "error", err)
	}
	r.mu.Lock()
	r.good = true
	r.mu.Unlock()
}

// ResolveNow does nothing: the xDS servers push every change.
func (r *xdsResolver) ResolveNow(resolver.ResolveNowOptions) {}

func (r *xdsResolver) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.release()
}

// listenerName names the target's Listener: with the bootstrap's
// templates (gRFC A47) when the builder has a bootstrap, else the
// target's path.
func (b *Builder) listenerName(tgt string, target resolver.Target) (string, error) {
	if b.bootstrap != nil {
		return b.bootstrap.ListenerName(tgt)
	}
	if target.URL.Host != "" {
		return "", fmt.Errorf("target %q names authority %q, which needs a bootstrap (Options.Bootstrap)", tgt, target.URL.Host)
	}
	name := strings.TrimPrefix(target.Endpoint(), "/")
	if name == "" {
		return "", fmt.Errorf("target %q names no Listener", tgt)
	}
	return name, nil
}
