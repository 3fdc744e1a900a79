package lrs

import (
	"fmt"
	"strings"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
)

// This file is the one place where load reporting meets the engine's
// servers: which bootstrap entry "self" means, which servers share a
// stream, and the transport a stream runs on (a connection of its own
// per server today). Sharing the ADS connection, or naming a server by
// its bootstrap entry rather than its URI, changes these functions only.

// selfServer returns the bootstrap's configuration of the server that
// an Update.ServerURI names.
func (c *Client) selfServer(serverURI string) (bootstrap.ServerConfig, bool) {
	return c.e.ServerConfig(serverURI)
}

// newTransport builds the transport of one server's LRS stream, as the
// engine builds its own (its transport builder and the bootstrap's
// credentials). The server's goroutine closes it.
func (c *Client) newTransport(srv bootstrap.ServerConfig) (engine.Transport, error) {
	return c.e.NewServerTransport(srv)
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
