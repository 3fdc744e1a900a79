package bootstrap

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// ServerListenerName returns the name of the Listener resource that
// configures a gRPC server listening on addr (gRFC A36): the bootstrap's
// server_listener_resource_name_template with every "%s" replaced by the
// address as "host:port", an IPv6 host in brackets ("[::]:8080"). An IP
// host is written as Go's net.TCPAddr prints it, which is what grpc-go
// substitutes, so "0:0::0" becomes "::" and a port's leading zeros go. An
// xdstp:// template gets the address percent-encoded, as client listener
// templates do (gRFC A47); any other template takes it verbatim.
//
// It fails when the bootstrap has no template, which gRFC A36 gives no
// default, or when addr is not "host:port" with a port in [0, 65535].
func (b *Bootstrap) ServerListenerName(addr string) (string, error) {
	if b.ServerListenerResourceNameTemplate == "" {
		return "", errors.New("bootstrap has no server_listener_resource_name_template: an xDS-enabled server cannot name its Listener")
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listening address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return "", fmt.Errorf("listening address %q: port %q is not a number in [0, 65535]", addr, portText)
	}
	// A zoned IPv6 address does not parse here and is kept as written,
	// as net.TCPAddr keeps its zone.
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return xdsname.ExpandTemplate(b.ServerListenerResourceNameTemplate, net.JoinHostPort(host, strconv.FormatUint(port, 10))), nil
}
