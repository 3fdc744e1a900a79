package relay

import (
	"context"
	"maps"
	"reflect"
	"sync"

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
// those removed. It is built once, when first asked for, and stamped.
type nextReturned struct {
	base     map[string]string
	names    []string
	versions []string
	removed  []string
	stamp    func(map[string]string)

	once sync.Once
	m    map[string]string
}

func (n *nextReturned) get() map[string]string {
	n.once.Do(func() {
		m := maps.Clone(n.base)
		if m == nil {
			m = make(map[string]string, len(n.names))
		}
		for i, name := range n.names {
			m[name] = n.versions[i]
		}
		for _, name := range n.removed {
			delete(m, name)
		}
		n.m, n.base = m, nil
		n.stamp(m)
	})
	return n.m
}

// mapIdentity tells maps apart: the server hands back the very map a
// response carried as the stream's returned resources, which is how a
// stamp is found. A stamp holds its map, so an identity is not reused
// while it is stamped.
func mapIdentity(m map[string]string) uintptr {
	return reflect.ValueOf(m).Pointer()
}
