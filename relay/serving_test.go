package relay

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
)

// servingStep is one step of a serving scenario: a change of the
// resources, then a request of the stream (an ACK, or a subscription
// changed). Each step's response, if any, is compared between the serving
// cache and go-control-plane's LinearCache.
type servingStep struct {
	set    map[string]string // name: content
	delete []string
	// changes makes that many changes of a resource no stream subscribes,
	// to move the change log past a stream's stamp.
	changes int
	// request sends a request: the subscription's changes (delta:
	// subscribe and unsubscribe; State of the World: names, the whole
	// subscription); ack sends the same subscription again.
	request        bool
	sub, unsub     []string
	names          []string
	foreignVersion bool
	// maxCompared, if positive, bounds the names the serving cache
	// compared in the step (-1: none at all).
	maxCompared int
}

func TestServingCacheAgreesWithLinearCache(t *testing.T) {
	base := map[string]string{"a": "a1", "b": "b1", "c": "c1"}
	ack := servingStep{request: true}
	tests := []struct {
		name    string
		typeURL string
		delta   bool
		first   servingStep // the stream's first request
		steps   []servingStep
		// recycles: a response's returned resources are built from a
		// map the server let go of, not copied.
		recycles bool
	}{
		{name: "delta wildcard", typeURL: cds.TypeURL, delta: true, first: servingStep{},
			steps: []servingStep{ack, {set: map[string]string{"b": "b2"}, maxCompared: 1}, {request: true, maxCompared: -1},
				{delete: []string{"a"}, maxCompared: 1}, ack, {set: map[string]string{"d": "d1"}}, ack,
				{set: map[string]string{"d": "d1"}}, ack}, recycles: true},
		{name: "delta named", typeURL: eds.TypeURL, delta: true, first: servingStep{sub: []string{"a", "b"}},
			steps: []servingStep{ack, {set: map[string]string{"c": "c2"}}, {set: map[string]string{"a": "a2"}}, ack,
				{request: true, sub: []string{"d"}, unsub: []string{"b"}}, {set: map[string]string{"d": "d1"}}, ack,
				{delete: []string{"d"}}, ack, {request: true, sub: []string{"*"}}, ack, {request: true, unsub: []string{"*"}}}, recycles: true},
		{name: "delta wildcard unsubscribes a name", typeURL: cds.TypeURL, delta: true, first: servingStep{sub: []string{"*", "a"}},
			steps: []servingStep{ack, {request: true, unsub: []string{"a"}}, ack, {set: map[string]string{"a": "a3"}}, ack}, recycles: true},
		{name: "delta changes during an open watch", typeURL: eds.TypeURL, delta: true, first: servingStep{sub: []string{"a"}},
			steps: []servingStep{ack, {request: true, sub: []string{"b"}}, {request: true, unsub: []string{"a"}},
				{set: map[string]string{"a": "a4", "b": "b4"}}, ack}, recycles: true},
		{name: "delta behind the change log", typeURL: cds.TypeURL, delta: true, first: servingStep{},
			steps: []servingStep{{set: map[string]string{"b": "b5"}}, {changes: 3 * minChangeLog}, ack, {set: map[string]string{"c": "c5"}}, ack}},
		{name: "sotw full state wildcard", typeURL: cds.TypeURL, first: servingStep{},
			steps: []servingStep{ack, {set: map[string]string{"b": "b2"}}, {request: true, maxCompared: -1}, {delete: []string{"c"}}, ack,
				{request: true, foreignVersion: true}, ack}, recycles: true},
		{name: "sotw full state named", typeURL: cds.TypeURL, first: servingStep{names: []string{"a", "b"}},
			steps: []servingStep{ack, {set: map[string]string{"c": "c2"}}, {delete: []string{"b"}}, ack,
				{request: true, names: []string{"a", "c"}}, ack, {set: map[string]string{"b": "b6"}}, ack}, recycles: true},
		{name: "sotw not full state", typeURL: eds.TypeURL, first: servingStep{names: []string{"a", "b"}},
			steps: []servingStep{ack, {delete: []string{"a"}}, {set: map[string]string{"b": "b2"}}, ack,
				{set: map[string]string{"a": "a7"}}, ack, {request: true, names: []string{"b", "c"}}, ack,
				{changes: 3 * minChangeLog}, {set: map[string]string{"c": "c7"}}, ack}, recycles: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serving := newServingCache(tt.typeURL, "p-", time.Now)
			linear := cache.NewLinearCache(tt.typeURL, cache.WithVersionPrefix("p-"))
			update := func(set map[string]string, del []string) {
				bs, rs := map[string][]byte{}, map[string]types.Resource{}
				for name, content := range set {
					b := rawBytes(content)
					bs[name], rs[name] = b, rawMessage(b)
				}
				serving.update(bs, del)
				if err := linear.UpdateResources(rs, del); err != nil {
					t.Fatal(err)
				}
			}
			update(base, nil)
			ours, theirs := newServingStream(tt.typeURL, tt.delta), newServingStream(tt.typeURL, tt.delta)
			step := func(i int, s servingStep) {
				t.Helper()
				before := serving.compared
				if s.set != nil || s.delete != nil {
					update(s.set, s.delete)
				}
				for n := range s.changes {
					update(map[string]string{"zz-unwatched": strconv.Itoa(n)}, nil)
				}
				if s.request || i < 0 {
					ours.request(t, serving, s)
					theirs.request(t, linear, s)
				}
				got, want := ours.receive(), theirs.receive()
				if got != want {
					t.Fatalf("step %d: the serving cache responded\n%s\nthe LinearCache\n%s", i, got, want)
				}
				if compared := serving.compared - before; (s.maxCompared < 0 && compared > 0) || compared > s.maxCompared && s.maxCompared > 0 {
					t.Errorf("step %d: %d names compared, want at most %d", i, compared, max(s.maxCompared, 0))
				}
			}
			step(-1, tt.first)
			for i, s := range tt.steps {
				step(i, s)
			}
			if got := ours.recycled > 0; got != tt.recycles {
				t.Errorf("%d responses' returned resources recycled a map; want recycling %v", ours.recycled, tt.recycles)
			}
			ours.close()
			theirs.close()
		})
	}
}

// servingStream plays go-control-plane's server for one stream of one
// type: it keeps the Subscription as the server does, cancels a watch
// before each request and records the returned resources of a response.
type servingStream struct {
	typeURL string
	delta   bool
	started bool
	sub     stream.Subscription
	ch      chan cache.Response
	dch     chan cache.DeltaResponse
	cancel  func()
	nonce   int
	version string
	// maps are every map of returned resources received, kept so that
	// no identity is reused; recycled counts those received again.
	maps     []map[string]string
	recycled int
}

func newServingStream(typeURL string, delta bool) *servingStream {
	return &servingStream{typeURL: typeURL, delta: delta, ch: make(chan cache.Response, 1), dch: make(chan cache.DeltaResponse, 1)}
}

func (s *servingStream) close() {
	if s.cancel != nil {
		s.cancel()
	}
}

func (s *servingStream) request(t *testing.T, c cache.ConfigWatcher, step servingStep) {
	s.close()
	var err error
	if s.delta {
		req := &discoverypb.DeltaDiscoveryRequest{TypeUrl: s.typeURL, ResourceNamesSubscribe: step.sub, ResourceNamesUnsubscribe: step.unsub}
		if s.nonce > 0 {
			req.ResponseNonce = strconv.Itoa(s.nonce)
		}
		if !s.started {
			s.sub = stream.NewDeltaSubscription(step.sub, step.unsub, nil, true)
		} else {
			s.sub.UpdateResourceSubscriptions(step.sub, step.unsub)
		}
		s.cancel, err = c.CreateDeltaWatch(req, s.sub, s.dch)
	} else {
		names := step.names
		if s.started && names == nil {
			names = s.lastNames()
		}
		req := &discoverypb.DiscoveryRequest{TypeUrl: s.typeURL, ResourceNames: names, VersionInfo: s.version}
		if step.foreignVersion {
			req.VersionInfo = "another-relay-7"
		}
		if !s.started {
			s.sub = stream.NewSotwSubscription(names, true)
		} else {
			s.sub.SetResourceSubscription(names)
		}
		s.cancel, err = c.CreateWatch(req, s.sub, s.ch)
	}
	s.started = true
	if err != nil {
		t.Fatal(err)
	}
}

func (s *servingStream) lastNames() []string {
	if s.sub.IsWildcard() {
		return nil
	}
	return slices.Sorted(maps.Keys(s.sub.SubscribedResources()))
}

// receive takes the response sent, if any, as the server would, and
// describes it ("" for none).
func (s *servingStream) receive() string {
	select {
	case resp := <-s.ch:
		out, _ := resp.GetDiscoveryResponse()
		s.nonce++
		s.version = resp.GetResponseVersion()
		s.sub.SetReturnedResources(s.keep(resp.GetReturnedResources()))
		var names []string
		for _, r := range out.GetResources() {
			names = append(names, string(r.GetValue()))
		}
		slices.Sort(names)
		return fmt.Sprintf("version %s resources %v returned %v", out.GetVersionInfo(), names, sortedMap(resp.GetReturnedResources()))
	case resp := <-s.dch:
		out, _ := resp.GetDeltaDiscoveryResponse()
		s.nonce++
		s.sub.SetReturnedResources(s.keep(resp.GetNextVersionMap()))
		var names []string
		for _, r := range out.GetResources() {
			names = append(names, r.GetName()+"="+string(r.GetResource().GetValue())+"@"+r.GetVersion()[:8])
		}
		slices.Sort(names)
		removed := slices.Sorted(slices.Values(out.GetRemovedResources()))
		return fmt.Sprintf("version %s resources %v removed %v returned %v", out.GetSystemVersionInfo(), names, removed, sortedMap(resp.GetNextVersionMap()))
	default:
		return ""
	}
}

func (s *servingStream) keep(m map[string]string) map[string]string {
	for _, old := range s.maps {
		if mapIdentity(old) == mapIdentity(m) {
			s.recycled++
		}
	}
	s.maps = append(s.maps, m)
	return m
}

func sortedMap(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if len(v) > 8 {
			v = v[:8]
		}
		out = append(out, k+"@"+v)
	}
	return fmt.Sprint(out)
}

// rawBytes is a resource's bytes; the content itself serves as bytes.
func rawBytes(content string) []byte { return []byte(content) }

// rawMessage is b as go-control-plane's caches hold it: a message whose
// serialization is b, as unknown fields of an empty message.
func rawMessage(b []byte) proto.Message {
	m := &emptypb.Empty{}
	m.ProtoReflect().SetUnknown(b)
	return m
}

// TestServingStampLifetime: an ACK within stampTTL compares nothing; a
// stamp older than that is dropped (a stream that ended leaves one, and it
// holds the stream's map), and the stream's next watch compares every
// resource, with the same response the LinearCache gives.
func TestServingStampLifetime(t *testing.T) {
	for _, tt := range []struct {
		name         string
		wait         time.Duration
		wantCompared int
	}{
		{name: "within the lifetime", wait: stampTTL / 2, wantCompared: 0},
		{name: "past it", wait: stampTTL + time.Second, wantCompared: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			serving := newServingCache(eds.TypeURL, "p-", func() time.Time { return now })
			serving.update(map[string][]byte{"a": rawBytes("a1"), "b": rawBytes("b1"), "c": rawBytes("c1")}, nil)
			first := servingStep{sub: []string{"*"}}
			slow, other := newServingStream(eds.TypeURL, true), newServingStream(eds.TypeURL, true)
			slow.request(t, serving, first)
			if got := slow.receive(); got == "" {
				t.Fatal("no response to the first request")
			}
			now = now.Add(tt.wait)
			// Another stream's response stamps its map, dropping what
			// expired.
			other.request(t, serving, first)
			other.receive()
			before := serving.compared
			slow.request(t, serving, servingStep{})
			if got := slow.receive(); got != "" {
				t.Errorf("the ACK was answered: %s", got)
			}
			if got := serving.compared - before; got != tt.wantCompared {
				t.Errorf("the ACK compared %d names, want %d", got, tt.wantCompared)
			}
			slow.close()
			other.close()
		})
	}
}
