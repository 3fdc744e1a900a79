package lds

import (
	"fmt"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// hcmField is the path of the HttpConnectionManager in an API listener.
const hcmField = "api_listener.api_listener"

func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	m := new(listenerv3.Listener)
	if err := proto.Unmarshal(raw, m); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("cannot parse Listener: %w", err)
	}
	l, err := convert(m, opts.KeepRaw(raw))
	if err != nil {
		return registry.DecodeResult{Name: m.GetName()}, err
	}
	return registry.DecodeResult{Name: l.Name, Resource: l}, nil
}

// convert records what the message says; validate judges it. The only
// errors here are embedded messages that do not parse, since nothing can
// be recorded about them. As in gRPC, a Listener with api_listener is a
// client's and any other a server's.
func convert(m *listenerv3.Listener, raw []byte) (*Listener, error) {
	l := &Listener{Name: m.GetName(), raw: raw}
	api := m.GetApiListener()
	if api == nil {
		s, err := convertServer(m)
		if err != nil {
			return nil, err
		}
		l.Server = s
		return l, nil
	}
	l.api.set = true
	l.api.typeURL = api.GetApiListener().GetTypeUrl()
	if !isHCMType(l.api.typeURL) {
		return l, nil
	}
	h, err := convertHCM(api.GetApiListener().GetValue(), false)
	if err != nil {
		return nil, registry.FieldWithin(hcmField, err)
	}
	l.RouteConfigName, l.RouteConfig, l.HTTPFilters, l.MaxStreamDuration = h.RouteConfigName, h.RouteConfig, h.HTTPFilters, h.MaxStreamDuration
	l.hcm = h.facts
	return l, nil
}
