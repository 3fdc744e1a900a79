package wire

import (
	"context"
	"fmt"
	"log/slog"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// sotw is the State-of-the-World variant: each request names every
// subscribed name of its type with the last accepted version, and the
// next request answers the latest response, which supersedes any before
// it.
//
// A wildcard is written as Envoy first writes it: no names at all (the
// legacy wildcard), which every server reads, names beside it left out:
// they are resources of the type, which the wildcard brings too, and
// their does-not-exist timers run as ever. A server reads an empty list
// as a wildcard only on a stream that has named nothing of the type
// before; after names it reads "nothing", and "*" is not read as a
// wildcard by every server (go-control-plane's SnapshotCache takes it for
// a name, answers with nothing, and again on each ACK). So a wildcard
// that joins names written on a stream ends the stream, which is replaced
// at once (ErrNewStream): on the new one the wildcard is written first.
// A server whose wildcard leaves out resources it would send by name
// serves wildcard and names together over incremental xDS, where "*" is
// written beside the names.
type sotw struct{}

func (sotw) read(s *stream, b []byte) (*decoding, error) {
	env, err := parseEnvelope(b, envelopeArray())
	if err != nil {
		// proto.Unmarshal says why, in the words NACKs have always used.
		resp := &discoverypb.DiscoveryResponse{}
		if err := proto.Unmarshal(b, resp); err != nil {
			return nil, err
		}
		env = envelopeOf(resp)
	}
	defer releaseEnvelope(env.resources)
	if s.cfg.Log.Enabled(context.Background(), slog.LevelDebug) { // its arguments would allocate on every response
		s.cfg.Log.Debug("xDS response received", "server", s.cfg.DecodeOptions.Server.URI, "type", env.typeURL, "version", env.version,
			"nonce", env.nonce, "resources", len(env.resources), "resource_errors", len(env.errors))
	}
	resp := &Response{TypeURL: env.typeURL, Version: env.version, Received: s.cfg.Clock.Now()}
	typ, known := s.cfg.Names.Type(env.typeURL)
	if !known {
		return &decoding{resp: resp}, nil
	}
	resp.Type = typ
	repeatable, lastVersion, _, changes := s.repeatable(env.typeURL)
	cands := candidates(len(env.resources))
	// A bare resource of the response's type, nearly every one, is taken
	// as it is. Resources of one type URL share its slice (rawAny), so
	// the type URL is compared with typ's once per slice, not once per
	// resource.
	bare := typ.TypeURL != resourceWrapperTypeURL
	var checked []byte // the last type URL compared with typ's
	isType := false    // whether it was typ's
	for i := range env.resources {
		c, res := &cands[i], &env.resources[i]
		if !sameSlice(res.typeURL, checked) {
			checked, isType = res.typeURL, string(res.typeURL) == typ.TypeURL
		}
		if bare && isType {
			c.Raw = res.value
		} else {
			c.wrapper, c.Raw, c.TTL, c.Err = unwrapResource(typ.TypeURL, res)
		}
		c.name = c.wrapper
	}
	if repeatable && env.version == lastVersion && s.repeatsLast(env.typeURL, cands, len(env.errors)) {
		releaseCandidates(cands)
		resp.Repeat = true
		return &decoding{resp: resp, typ: typ, nonce: env.nonce}, nil
	}
	d := s.decode(resp, env.nonce, cands, env.errors, nil, true)
	d.changes = changes
	return d, nil
}

// request builds a DiscoveryRequest, unless it would repeat the last one
// written exactly, or the type was never subscribed on this stream and
// has nothing to subscribe.
func (sotw) request(s *stream, st *typeState, typeURL string, sub Subscription) proto.Message {
	names, version := sub.Names, sub.Version
	if sub.Wildcard {
		if st.named {
			s.replace = true
			return nil
		}
		names = nil
		if !st.written {
			// Asked afresh: every server then answers with all it has,
			// one that has turned the legacy wildcard off too
			// (go-control-plane's SnapshotCache answers an empty list with
			// everything whenever the version differs).
			version = ""
		}
	}
	changed := len(sub.Added) > 0 || len(sub.Removed) > 0
	if st.nack == nil && st.written && st.lastVer == version && st.lastNon == st.nonce && !changed {
		return nil
	}
	if !st.written && len(sub.Names) == 0 {
		return nil
	}
	req := &discoverypb.DiscoveryRequest{
		VersionInfo:   version,
		ResourceNames: names,
		TypeUrl:       typeURL,
		ResponseNonce: st.nonce,
		ErrorDetail:   st.nack,
	}
	st.nack = nil
	st.named = st.named || len(names) > 0
	s.trackLocked(st, sub)
	st.lastVer, st.lastNon, st.written = version, st.nonce, true
	return req
}

func (sotw) answered(st *typeState, nonce string, nack *rpcstatus.Status) {
	st.nonce, st.nack = nonce, nack
}

// setNode puts the node in a request: the first of each stream carries
// it.
// repeatsLast reports whether a response's candidates are the last
// response's resources of the type (see repeatsMemo).
func (s *stream) repeatsLast(typeURL string, cands []candidate, errs int) bool {
	m := s.cfg.Memo
	m.mu.Lock()
	defer m.mu.Unlock()
	return repeatsMemo(m.forType(typeURL), cands, errs)
}

func setNode(msg proto.Message, node *corepb.Node) {
	switch m := msg.(type) {
	case *discoverypb.DiscoveryRequest:
		m.Node = node
	case *discoverypb.DeltaDiscoveryRequest:
		m.Node = node
	}
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
