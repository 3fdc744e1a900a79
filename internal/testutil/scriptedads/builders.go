package scriptedads

import (
	"fmt"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
)

// Response builds a SotW response without a nonce, so that Send assigns
// the stream's next one. Tests set the other fields (ResourceErrors,
// ControlPlane, a nonce of their own) on the result directly.
func Response(typeURL, version string, resources ...*anypb.Any) *discoverypb.DiscoveryResponse {
	return &discoverypb.DiscoveryResponse{
		TypeUrl:     typeURL,
		VersionInfo: version,
		Resources:   resources,
	}
}

// Wrap wraps res in an envoy.service.discovery.v3.Resource named name, the
// envelope servers use to name a resource explicitly (and clients must
// unwrap), and returns it as an Any.
func Wrap(name string, res *anypb.Any) *anypb.Any {
	a, err := anypb.New(&discoverypb.Resource{Name: name, Resource: res})
	if err != nil {
		// Marshalling a well-formed message in memory cannot fail.
		panic(fmt.Sprintf("scriptedads: wrapping %q: %v", name, err))
	}
	return a
}

// ResourceError builds an entry of DiscoveryResponse.resource_errors
// (xRFC TP3), which tells the client that resource name could not be
// served, and why.
func ResourceError(name string, code codes.Code, msg string) *discoverypb.ResourceError {
	return &discoverypb.ResourceError{
		ResourceName: &discoverypb.ResourceName{Name: name},
		ErrorDetail:  &statuspb.Status{Code: int32(code), Message: msg},
	}
}
