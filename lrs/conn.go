package lrs

import (
	"fmt"
	"strings"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/transport"
)

// This file is the one place where load reporting meets the engine's
// servers: which servers share a stream, and the transport a stream runs
// on, which is the engine's own connection to the server.

// transport returns the engine's transport to a server, shared with its
// ADS stream, and the function that gives it back.
func (c *Client) transport(srv bootstrap.ServerConfig) (transport.Transport, func(), error) {
	return c.e.Transport(srv)
}

// node is the engine's node with the LRS client feature.
func (c *Client) node() *corepb.Node {
	n := c.e.Node()
	n.ClientFeatures = append(n.ClientFeatures, ClientFeature)
	return n
}

// serverKey tells servers apart as the engine does: by URI, credentials
// and features.
func serverKey(s bootstrap.ServerConfig) string {
	var b strings.Builder
	b.WriteString(s.URI)
	for _, cc := range s.ChannelCreds {
		fmt.Fprintf(&b, "\x00c:%s:%s", cc.Type, cc.Config)
	}
	for _, cc := range s.CallCreds {
		fmt.Fprintf(&b, "\x00k:%s:%s", cc.Type, cc.Config)
	}
	return b.String()
}

// sendCloser is a stream that can half-close: the server then reads the
// end of the stream after every message sent, and ends it. The final
// report waits for that, so that cancelling the stream cannot drop a
// report gRPC has taken but not yet written or the server not yet read.
// The engine's gRPC transport implements it.
type sendCloser interface {
	CloseSend() error
}
