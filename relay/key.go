package relay

import (
	"fmt"
	"strings"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// Aggregation decides whose configuration a downstream client gets. The
// clients whose nodes have the same key share one upstream engine and one
// cache; a client never receives another key's configuration. Each key's
// engine presents the node Node returns to the upstream servers, which is
// how a server that varies resources by node sends each key its own.
//
// The methods may be called concurrently.
type Aggregation interface {
	// Key returns the key of a downstream client's node. An error ends
	// the client's stream with it, so it should carry a gRPC status code.
	Key(node *corepb.Node) (string, error)
	// Node returns the node the engine of key presents upstream, given the
	// relay's own node from its bootstrap. It must not modify relay.
	Node(key string, relay bootstrap.Node) bootstrap.Node
}

// ByCluster keys clients by their node's cluster (the default): each
// key's engine presents the relay's node with its cluster set to the key.
func ByCluster() Aggregation { return byCluster{} }

// ByID keys clients by their node ID: each key's engine presents the
// relay's node with its ID set to the key, so that a server keying its
// configuration by node ID (as go-control-plane's snapshot cache does)
// answers the relay as it would the client. Clients of one node ID share,
// but nothing is shared across nodes.
func ByID() Aggregation { return byID{} }

// ByMetadata keys clients by the string value of one field of their
// node's metadata: each key's engine presents the relay's node with that
// field set to the key. A client whose node lacks the field, or has a
// value that is not a string, is refused with INVALID_ARGUMENT.
func ByMetadata(field string) Aggregation { return byMetadata{field: field} }

// ParseAggregation parses an aggregation named as on xdsrelay's command
// line: "cluster", "id" or "metadata:NAME".
func ParseAggregation(s string) (Aggregation, error) {
	switch {
	case s == "cluster":
		return ByCluster(), nil
	case s == "id":
		return ByID(), nil
	case strings.HasPrefix(s, "metadata:"):
		field := strings.TrimPrefix(s, "metadata:")
		if field == "" {
			return nil, fmt.Errorf("aggregation key %q: metadata needs a field name, as in metadata:NAME", s)
		}
		return ByMetadata(field), nil
	}
	return nil, fmt.Errorf("aggregation key %q: want cluster, id or metadata:NAME", s)
}

type byCluster struct{}

func (byCluster) Key(node *corepb.Node) (string, error) { return node.GetCluster(), nil }

func (byCluster) Node(key string, relay bootstrap.Node) bootstrap.Node {
	relay.Cluster = key
	return relay
}

func (byCluster) String() string { return "cluster" }

type byID struct{}

func (byID) Key(node *corepb.Node) (string, error) { return node.GetId(), nil }

func (byID) Node(key string, relay bootstrap.Node) bootstrap.Node {
	relay.ID = key
	return relay
}

func (byID) String() string { return "id" }

type byMetadata struct{ field string }

func (m byMetadata) Key(node *corepb.Node) (string, error) {
	v, ok := node.GetMetadata().GetFields()[m.field]
	if !ok {
		return "", status.Errorf(codes.InvalidArgument,
			"node %q: metadata has no field %q, which this relay's aggregation key needs", node.GetId(), m.field)
	}
	s, ok := v.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return "", status.Errorf(codes.InvalidArgument,
			"node %q: metadata field %q is not a string, which this relay's aggregation key needs", node.GetId(), m.field)
	}
	return s.StringValue, nil
}

func (m byMetadata) Node(key string, relay bootstrap.Node) bootstrap.Node {
	md := &structpb.Struct{}
	if relay.Metadata != nil {
		md = proto.Clone(relay.Metadata).(*structpb.Struct)
	}
	if md.Fields == nil {
		md.Fields = map[string]*structpb.Value{}
	}
	md.Fields[m.field] = structpb.NewStringValue(key)
	relay.Metadata = md
	return relay
}

func (m byMetadata) String() string { return "metadata:" + m.field }
