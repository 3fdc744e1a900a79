package engine_test

import (
	"testing"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
)

// FuzzResponse sends arbitrary bytes as a DiscoveryResponse, through a
// real gRPC stream, to an engine that has resources of both test types
// cached (see fuzzEnv), and checks that:
//   - the engine keeps working: a valid response sent next is applied,
//     ACKed and notified (no panic, no deadlock, the stream stays up);
//   - every request it writes is bounded in size, valid UTF-8 and still
//     subscribes every watched name, and it logs no error;
//   - every error a watcher sees is an *engine.Error with a non-OK code;
//   - bytes that do not parse as a DiscoveryResponse drop nothing cached;
//   - a response that parses leaves the other type untouched, and, if it
//     holds a resource whose name cannot be learned, deletes nothing by
//     absence (no cached resource becomes DOES_NOT_EXIST).
func FuzzResponse(f *testing.F) {
	for _, b := range responseSeeds() {
		f.Add(b)
	}
	h := newFuzzEnvHolder(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h.run(t, func(env *fuzzEnv) { env.response(t, b) })
	})
}

// maxSeedBytes leaves out of the seed corpus the cases of the bad-input
// table with megabyte names (the 100,000-entry ones are not even built):
// TestBadInput covers them, and as fuzz seeds they would make every
// mutation of theirs slow.
const maxSeedBytes = 256 << 10

func responseSeeds() [][]byte {
	var seeds [][]byte
	add := func(r *discoverypb.DiscoveryResponse) {
		b, err := proto.Marshal(r)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, b)
	}
	for _, tc := range badInputTable(false) {
		b := tc.raw
		if b == nil {
			var err error
			if b, err = proto.Marshal(tc.response()); err != nil {
				panic(err)
			}
		}
		if len(b) <= maxSeedBytes {
			seeds = append(seeds, b)
		}
	}
	// Valid responses, and ones around the watched names: updates,
	// deletions, TP3 errors, wrappers, xdstp names.
	for _, typeURL := range []string{thing, required} {
		x := fuzzXDSTPName(typeURL)
		all := func(extra ...*anypb.Any) []*anypb.Any {
			return append([]*anypb.Any{res(typeURL, "a"), res(typeURL, "b"), res(typeURL, x)}, extra...)
		}
		add(&discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "2", Nonce: "n2", Resources: all()})
		add(&discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "2", Nonce: "n2",
			Resources: all(res(typeURL, "c", "v", "new"))})
		add(&discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "2", Nonce: "n2",
			Resources: []*anypb.Any{res(typeURL, "a", "v", "2")}})
		add(&discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "2", Nonce: "n2",
			Resources: []*anypb.Any{res(typeURL, "a", "invalid", "no"), res(typeURL, "b"), scriptedads.Wrap(x, res(typeURL, ""))}})
		add(&discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "2", Nonce: "n2",
			Resources: []*anypb.Any{scriptedads.Wrap("a", res(typeURL, "a", "v", "w")), res(typeURL, fuzzXDSTPWatched(typeURL), "v", "2")},
			ResourceErrors: []*discoverypb.ResourceError{
				scriptedads.ResourceError("b", codes.PermissionDenied, "denied"),
				scriptedads.ResourceError("c", codes.Unavailable, "later"),
			}})
		add(&discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: "2", Nonce: "n2",
			Resources: []*anypb.Any{res(typeURL, "a"), {TypeUrl: typeURL, Value: []byte{0x0a}}}})
	}
	return seeds
}

func (env *fuzzEnv) response(t *testing.T, b []byte) {
	if err := env.st.SendRaw(b); err != nil {
		t.Fatalf("sending the input: %v (the stream ended before it)", err)
	}
	events := env.probe(t)
	states := env.states()
	env.checkLogs(t)

	resp := &discoverypb.DiscoveryResponse{}
	unreadable := proto.Unmarshal(b, resp) != nil
	respType := resp.GetTypeUrl()
	nameless := false
	if !unreadable && (respType == thing || respType == required) {
		for _, r := range resp.GetResources() {
			nameless = nameless || unnamedResource(respType, r)
		}
	}
	for _, typeURL := range []string{thing, required} {
		for _, name := range fuzzCached(typeURL) {
			k := watchKey{typeURL, name}
			s := states[k]
			switch {
			case unreadable:
				// What the response held is unknown: at most an ambient
				// NACK, never "stop using the resource".
				if !s.cached {
					t.Errorf("%s %q was dropped (now %v) by a response that does not parse", typeURL, name, s.status)
				}
				for _, ev := range events[k] {
					if !ev.Ambient && ev.Err != nil {
						t.Errorf("%s %q: watcher got %v from a response that does not parse", typeURL, name, ev)
					}
				}
			case typeURL != respType:
				if s.status != adminpb.ClientResourceStatus_ACKED || !s.cached || len(events[k]) > 0 {
					t.Errorf("%s %q changed (now %v, cached %v, events %v) by a response of type %q",
						typeURL, name, s.status, s.cached, events[k], respType)
				}
			case nameless:
				if s.status == adminpb.ClientResourceStatus_DOES_NOT_EXIST {
					t.Errorf("%s %q deleted by absence (cached %v) from a response holding a resource whose name cannot be learned",
						typeURL, name, s.cached)
				}
				for _, ev := range events[k] {
					if engine.KindOf(ev.Err) == engine.KindDeleted {
						t.Errorf("%s %q: watcher got %v from a response holding a resource whose name cannot be learned", typeURL, name, ev)
					}
				}
			}
		}
	}
	if t.Failed() {
		return
	}
	env.reset(t)
}

// unnamedResource reports whether a resource of a response of type
// typeURL carries no name the engine could learn from it: a wrapper that
// does not parse or names nothing and holds nothing; a resource (in a
// nameless wrapper or none) of another type; or a test resource that does
// not parse or has no "name". It mirrors what the protocol allows a client
// to know, not the engine's code: when in doubt it says named, so that the
// deletion check never fires on a guess. A bare resource whose bytes are
// also sent, or cached, inside a named wrapper is still nameless: the
// name is the wrapper's, not the bytes' (testdata/fuzz/FuzzResponse/
// name-from-content-cache, a bug this target found).
func unnamedResource(typeURL string, r *anypb.Any) bool {
	inner := r
	if r.GetTypeUrl() == resourceWrapperURL {
		w := &discoverypb.Resource{}
		if proto.Unmarshal(r.GetValue(), w) != nil {
			return true
		}
		if w.GetName() != "" || w.GetResourceName().GetName() != "" {
			return false
		}
		if inner = w.GetResource(); inner == nil {
			return true
		}
	}
	if inner.GetTypeUrl() != typeURL {
		return true
	}
	s := &structpb.Struct{}
	if proto.Unmarshal(inner.GetValue(), s) != nil {
		return true
	}
	return s.GetFields()["name"].GetStringValue() == ""
}

const resourceWrapperURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"
