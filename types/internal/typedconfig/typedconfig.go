package typedconfig

import (
	"fmt"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/registry"
)

const (
	typedStructV3Message = "xds.type.v3.TypedStruct"
	typedStructV1Message = "udpa.type.v1.TypedStruct"
)

// TypeURL returns the type URL of the configuration in a, the one inside
// a TypedStruct if a holds one. It returns "" for a nil Any.
func TypeURL(a *anypb.Any) (string, error) {
	var ts interface {
		proto.Message
		GetTypeUrl() string
	}
	switch registry.TypeName(a.GetTypeUrl()) {
	case typedStructV3Message:
		ts = new(xdstypev3.TypedStruct)
	case typedStructV1Message:
		ts = new(udpatypev1.TypedStruct)
	default:
		return a.GetTypeUrl(), nil
	}
	if err := proto.Unmarshal(a.GetValue(), ts); err != nil {
		return "", fmt.Errorf("cannot parse TypedStruct: %w", err)
	}
	return ts.GetTypeUrl(), nil
}
