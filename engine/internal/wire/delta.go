package wire

import (
	"errors"
	"fmt"
	"slices"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// DeltaADSMethod is the full gRPC method name of the incremental ADS
// stream.
const DeltaADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"

// NewDelta returns an incremental (delta) ADS stream; Start opens it.
// It differs from [NewSotW] on the wire only: subscriptions go as
// changes, each resource carries its own version, the first request of a
// type says which versions are cached (initial_resource_versions), and a
// deletion is explicit (removed_resources) for every type. Timers, flow
// control, NACK rules and the host's view are the same.
func NewDelta(cfg Config) Stream {
	s := NewSotW(cfg).(*stream)
	s.delta = true
	return s
}

// nextDeltaRequestLocked builds the request of the next dirty type: the
// names subscribed and unsubscribed since the last request of the type on
// this stream (all of them, with the cached versions, on the first), and
// the ACK or NACK of the last response, if not yet answered.
func (s *stream) nextDeltaRequestLocked() (*discoverypb.DeltaDiscoveryRequest, string) {
	for len(s.dirty) > 0 {
		typeURL := s.nextDirtyLocked()
		st := s.typeLocked(typeURL)
		if st.applying {
			continue
		}
		changes, _ := s.host.SubscriptionLocked(typeURL)
		if s.ended {
			return nil, ""
		}
		// The list is built here, under the lock: an incremental request
		// carries the names that changed against the list the stream
		// wrote last (diffSorted below), or all of them on the first.
		names := s.listLocked(typeURL, changes)
		req := &discoverypb.DeltaDiscoveryRequest{TypeUrl: typeURL}
		changed := !st.written || !(sameSlice(st.last, names) || slices.Equal(st.last, names))
		switch {
		case !st.written:
			if len(names) == 0 {
				continue
			}
			req.ResourceNamesSubscribe = names
			req.InitialResourceVersions = s.host.ResourceVersionsLocked(typeURL)
		case changed:
			diffSorted(st.last, names, func(n string) {
				req.ResourceNamesUnsubscribe = append(req.ResourceNamesUnsubscribe, n)
			}, func(n string) {
				req.ResourceNamesSubscribe = append(req.ResourceNamesSubscribe, n)
			})
		}
		if !changed && len(st.answers) == 0 {
			continue
		}
		if len(st.answers) > 0 {
			// Each response is answered once, in order, by its own
			// request: an ACK, or a NACK with the reasons. Unlike a SotW
			// response, an incremental one is not superseded by the
			// next, so a NACK must not be lost to a later ACK.
			a := st.answers[0]
			st.answers = st.answers[1:]
			req.ResponseNonce, req.ErrorDetail = a.nonce, a.nack
			if len(st.answers) > 0 {
				s.markDirtyLocked(typeURL)
			}
		}
		if !s.sentNode {
			req.Node = s.cfg.Node
			s.sentNode = true
		}
		if changed {
			s.trackSubscriptionsLocked(st, names)
		}
		st.last, st.written = names, true
		return req, typeURL
	}
	return nil, ""
}

// answer is how an incremental response is answered: its nonce, and the
// NACK's error_detail or nil for an ACK.
type answer struct {
	nonce string
	nack  *rpcstatus.Status
}

// nextDirtyLocked takes the first dirty type, in type URL order.
func (s *stream) nextDirtyLocked() string {
	types := make([]string, 0, len(s.dirty))
	for t := range s.dirty {
		types = append(types, t)
	}
	slices.Sort(types)
	delete(s.dirty, types[0])
	return types[0]
}

// readDelta parses and decodes a DeltaDiscoveryResponse.
func (s *stream) readDelta(b []byte) incoming {
	resp := &discoverypb.DeltaDiscoveryResponse{}
	in := incoming{err: proto.Unmarshal(b, resp)}
	if in.err == nil {
		s.cfg.Log.Debug("xDS delta response received", "server", s.cfg.Server.URI, "type", resp.GetTypeUrl(),
			"system_version", resp.GetSystemVersionInfo(), "nonce", resp.GetNonce(), "resources", len(resp.GetResources()),
			"removed", len(resp.GetRemovedResources())+len(resp.GetRemovedResourceNames()), "resource_errors", len(resp.GetResourceErrors()))
	}
	in.typeURL, in.nonce = resp.GetTypeUrl(), resp.GetNonce()
	typ, known := s.cfg.Types(in.typeURL)
	in.known = known
	if in.err == nil && known {
		received := s.cfg.Clock.Now()
		in.decoded, in.tally = s.decodeDelta(typ, resp)
		in.decoded.Received = received
	}
	return in
}

// decodeDelta is stage 1 for an incremental response: as for SotW, plus
// the removed names. Nothing is deleted by absence.
func (s *stream) decodeDelta(typ registry.ResourceType, resp *discoverypb.DeltaDiscoveryResponse) (*Response, *tally) {
	cands := make([]candidate, len(resp.GetResources()))
	for i, res := range resp.GetResources() {
		c := &cands[i]
		c.Wrapper, c.Raw, c.Version, c.Err = deltaResource(typ, res)
		c.name = c.Wrapper
	}
	removed := resp.GetRemovedResources()
	for _, rn := range resp.GetRemovedResourceNames() {
		removed = append(slices.Clip(removed), rn.GetName())
	}
	// Not pipelined: the removed names are checked against every
	// resource's before anything is applied.
	r, t := s.decodeCandidates(typ, cands, resp.GetResourceErrors(), len(removed), nil)
	r.Version = resp.GetSystemVersionInfo()
	r.Complete = false
	for i, name := range removed {
		key, err := s.host.ResolveName(typ.TypeURL, name)
		switch {
		case name == "":
			t.fail("removed_resources index %d: empty name", i)
		case err != nil:
			t.fail("removed_resources index %d, name %s: cannot parse xDS resource name: %v", i, QuoteName(name), err)
		case r.Named[key]:
			t.fail("removed_resources index %d, name %s: also in resources or resource_errors", i, QuoteName(name))
		default:
			r.Named[key] = true
			r.Removed = append(r.Removed, key)
		}
	}
	r.Invalid = t.invalid
	r.Accepted = r.Valid > 0 || len(t.failures) == 0
	return r, t
}

// deltaResource takes a resource out of a delta response's Resource: its
// name, bytes and version. Aliases are ignored (they serve on-demand VHDS,
// which this client does not use). A TTL is refused: a resource that
// expires unless the server renews it would need the client to drop it on
// its own clock, which gRPC's cache states (A88) have no place for.
func deltaResource(typ registry.ResourceType, res *discoverypb.Resource) (name string, raw []byte, version string, err error) {
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

// requestSummary logs a request, SotW or delta, by its counts.
type requestSummary struct{ msg proto.Message }

func (r requestSummary) String() string {
	switch m := r.msg.(type) {
	case *discoverypb.DiscoveryRequest:
		return fmt.Sprintf("type=%s version=%q nonce=%q names=%d nack=%v", m.GetTypeUrl(), m.GetVersionInfo(), m.GetResponseNonce(),
			len(m.GetResourceNames()), m.GetErrorDetail() != nil)
	case *discoverypb.DeltaDiscoveryRequest:
		return fmt.Sprintf("type=%s nonce=%q subscribe=%d unsubscribe=%d initial_versions=%d nack=%v", m.GetTypeUrl(), m.GetResponseNonce(),
			len(m.GetResourceNamesSubscribe()), len(m.GetResourceNamesUnsubscribe()), len(m.GetInitialResourceVersions()), m.GetErrorDetail() != nil)
	}
	return fmt.Sprint(r.msg)
}
