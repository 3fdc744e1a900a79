package relay

import (
	"context"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// sotwResponse is a State of the World response; the resources in it are
// shared by every stream sent the same versions.
type sotwResponse struct {
	req      *cache.Request
	out      *discoverypb.DiscoveryResponse
	version  string
	returned map[string]string
}

func (r *sotwResponse) GetDiscoveryResponse() (*discoverypb.DiscoveryResponse, error) {
	return r.out, nil
}
func (r *sotwResponse) GetRequest() *discoverypb.DiscoveryRequest { return r.req }
func (r *sotwResponse) GetVersion() (string, error)               { return r.version, nil }
func (r *sotwResponse) GetResponseVersion() string                { return r.version }
func (r *sotwResponse) GetReturnedResources() map[string]string   { return r.returned }
func (r *sotwResponse) GetContext() context.Context               { return context.Background() }

// deltaResponse is an incremental response.
type deltaResponse struct {
	req      *cache.DeltaRequest
	out      *discoverypb.DeltaDiscoveryResponse
	version  string
	returned map[string]string
}

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discoverypb.DeltaDiscoveryResponse, error) {
	return r.out, nil
}
func (r *deltaResponse) GetDeltaRequest() *discoverypb.DeltaDiscoveryRequest { return r.req }
func (r *deltaResponse) GetSystemVersion() (string, error)                   { return r.version, nil }
func (r *deltaResponse) GetResponseVersion() string                          { return r.version }
func (r *deltaResponse) GetNextVersionMap() map[string]string                { return r.returned }
func (r *deltaResponse) GetReturnedResources() map[string]string             { return r.returned }
func (r *deltaResponse) GetContext() context.Context                         { return context.Background() }

var (
	_ cache.Response      = (*sotwResponse)(nil)
	_ cache.DeltaResponse = (*deltaResponse)(nil)
)
