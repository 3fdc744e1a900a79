package relay

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// sotwResponse is a State of the World response; the resources in it are
// shared by every stream sent the same versions.
type sotwResponse struct {
	req     *cache.Request
	out     *discoverypb.DiscoveryResponse
	version string
	next    *nextReturned
}

func (r *sotwResponse) GetDiscoveryResponse() (*discoverypb.DiscoveryResponse, error) {
	return r.out, nil
}
func (r *sotwResponse) GetRequest() *discoverypb.DiscoveryRequest { return r.req }
func (r *sotwResponse) GetVersion() (string, error)               { return r.version, nil }
func (r *sotwResponse) GetResponseVersion() string                { return r.version }
func (r *sotwResponse) GetReturnedResources() map[string]string   { return r.next.get() }
func (r *sotwResponse) GetContext() context.Context               { return context.Background() }

// deltaResponse is an incremental response.
type deltaResponse struct {
	req     *cache.DeltaRequest
	out     *discoverypb.DeltaDiscoveryResponse
	version string
	next    *nextReturned
}

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discoverypb.DeltaDiscoveryResponse, error) {
	return r.out, nil
}
func (r *deltaResponse) GetDeltaRequest() *discoverypb.DeltaDiscoveryRequest { return r.req }
func (r *deltaResponse) GetSystemVersion() (string, error)                   { return r.version, nil }
func (r *deltaResponse) GetResponseVersion() string                          { return r.version }
func (r *deltaResponse) GetNextVersionMap() map[string]string                { return r.next.get() }
func (r *deltaResponse) GetReturnedResources() map[string]string             { return r.next.get() }
func (r *deltaResponse) GetContext() context.Context                         { return context.Background() }

var (
	_ cache.Response      = (*sotwResponse)(nil)
	_ cache.DeltaResponse = (*deltaResponse)(nil)
)

// nextReturned is a response's returned resources: the stream's before
// the response (base), with the versions of the resources sent, without
// those removed. It is built once, when first asked for, and stamped:
// from the stream's spare map if it has one, made equal to base where they
// may differ (sync), or else from a copy of base.
type nextReturned struct {
	base     map[string]string
	names    []string
	versions []string
	removed  []string
	spare    *spareMap
	sync     []string
	stamp    func(map[string]string)

	once sync.Once
	m    map[string]string
}

// spareMap is a map of returned resources the server let go of (it set
// the next one in its place), with the names in which it may differ from
// that next one. Responses built from the same map (a stream's stale
// response) share it, and only one recycles it.
type spareMap struct {
	m       map[string]string
	diff    []string
	claimed atomic.Bool
}

func (n *nextReturned) get() map[string]string {
	n.once.Do(func() {
		var m map[string]string
		if n.spare != nil && n.spare.claimed.CompareAndSwap(false, true) {
			m = n.spare.m
			for _, name := range n.sync {
				if v, ok := n.base[name]; ok {
					m[name] = v
				} else {
					delete(m, name)
				}
			}
		} else if m = maps.Clone(n.base); m == nil {
			m = make(map[string]string, len(n.names))
		}
		for i, name := range n.names {
			m[name] = n.versions[i]
		}
		for _, name := range n.removed {
			delete(m, name)
		}
		n.m, n.base, n.spare = m, nil, nil
		n.stamp(m)
	})
	return n.m
}
