package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// delta is the incremental variant: subscriptions go as changes, each
// resource carries its own version, deletions are explicit, and every
// response is answered by a request of its own, in order: unlike a SotW
// response, an incremental one is not superseded by the next, so a NACK
// must not be lost to a later ACK.
type delta struct{}

func (delta) read(s *stream, b []byte) (*decoding, error) {
	m := &discoverypb.DeltaDiscoveryResponse{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	if s.cfg.Log.Enabled(context.Background(), slog.LevelDebug) { // its arguments would allocate on every response
		s.cfg.Log.Debug("xDS delta response received", "server", s.cfg.DecodeOptions.Server.URI, "type", m.GetTypeUrl(),
			"system_version", m.GetSystemVersionInfo(), "nonce", m.GetNonce(), "resources", len(m.GetResources()),
			"removed", len(m.GetRemovedResources())+len(m.GetRemovedResourceNames()), "resource_errors", len(m.GetResourceErrors()))
	}
	resp := &Response{TypeURL: m.GetTypeUrl(), Version: m.GetSystemVersionInfo(), Received: s.cfg.Clock.Now()}
	typ, known := s.cfg.Names.Type(resp.TypeURL)
	if !known {
		return &decoding{resp: resp}, nil
	}
	resp.Type = typ
	removed := m.GetRemovedResources()
	for _, rn := range m.GetRemovedResourceNames() {
		removed = append(slices.Clip(removed), rn.GetName())
	}
	sum := s.sumDelta(m, removed)
	repeatable, _, lastSum, changes := s.repeatable(resp.TypeURL)
	if repeatable && sum == lastSum {
		resp.Repeat = true
		return &decoding{resp: resp, typ: typ, nonce: m.GetNonce()}, nil
	}
	cands := candidates(len(m.GetResources()))
	for i, res := range m.GetResources() {
		c := &cands[i]
		c.wrapper, c.Raw, c.Version, c.Err = deltaResource(typ, res)
		c.name = c.wrapper
	}
	d := s.decode(resp, m.GetNonce(), cands, m.GetResourceErrors(), removed, false)
	d.sum, d.changes = sum, changes
	return d, nil
}

// deltaResource takes a resource out of a delta response's Resource: its
// name, bytes and version. Aliases are ignored (they serve on-demand VHDS,
// which this client does not use). A TTL is refused: a resource that
// expires unless the server renews it would need the client to drop it on
// its own clock, which gRPC's cache states (A88) have no place for.
func deltaResource(typ *registry.ResourceType, res *discoverypb.Resource) (name string, raw []byte, version string, err error) {
	name = res.GetName()
	if name == "" {
		name = res.GetResourceName().GetName()
	}
	inner, version := res.GetResource(), res.GetVersion()
	switch {
	case res.GetTtl() != nil:
		return name, nil, version, fmt.Errorf("resource TTL (%v) is not supported by this client", res.GetTtl().AsDuration())
	case inner == nil:
		return name, nil, version, errors.New("Resource holds no resource")
	case inner.GetTypeUrl() != typ.TypeURL:
		return name, nil, version, fmt.Errorf("resource type %s in a response of type %q", QuoteName(inner.GetTypeUrl()), typ.TypeURL)
	}
	return name, inner.GetValue(), version, nil
}

// request builds a DeltaDiscoveryRequest: the names subscribed and
// unsubscribed since the type's last request on this stream (all of
// them, with the cached versions, on the first), and the answer to the
// oldest response not answered yet.
func (delta) request(s *stream, st *typeState, typeURL string, sub Subscription) proto.Message {
	req := &discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL}
	changed := len(sub.Added) > 0 || len(sub.Removed) > 0
	switch {
	case !st.written:
		if len(sub.Names) == 0 {
			return nil
		}
		req.ResourceNamesSubscribe = sub.Names
		req.InitialResourceVersions = sub.Versions
	case changed:
		req.ResourceNamesSubscribe, req.ResourceNamesUnsubscribe = sub.Added, sub.Removed
	case len(st.answers) == 0:
		return nil
	}
	if len(st.answers) > 0 {
		a := st.answers[0]
		st.answers = st.answers[1:]
		req.ResponseNonce, req.ErrorDetail = a.nonce, a.nack
		if len(st.answers) > 0 {
			s.Changed(typeURL)
		}
	}
	if changed || !st.written {
		s.trackLocked(st, sub)
	}
	st.written = true
	return req
}

func (delta) answered(st *typeState, nonce string, nack *rpcstatus.Status) {
	st.nonce = nonce
	st.answers = append(st.answers, answer{nonce: nonce, nack: nack})
}
