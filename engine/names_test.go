package engine_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
)

// TestSotWNamesAgainstLastResponse: a SotW response's names are compared
// with the last response's, index for index, and when every one agrees
// the last response's set of names is used instead of building another
// (the stream's lastResponse). Whatever the comparison finds, the rules
// are those of any response: a repeated name is NACKed, an invalid
// resource is NACKed and keeps its last good value, and a watched name
// that neither a resource nor a TP3 entry names is deleted. The steps are
// one stream's responses in order, each judged against the one before:
// names the same, reordered, dropped, added, repeated at either end of
// the comparison, with TP3 entries, and invalid. They run with small
// responses (decoded at once), with 200 more resources before them that
// change every time (decoded while they are applied), and with 8,200
// that do not change (more than a stream keeps the set of names of: a
// response that names the same keys leaves it to be built when deletions
// need it).
func TestSotWNamesAgainstLastResponse(t *testing.T) {
	type step struct {
		names    []string // "b!" is b with a new value, "b?" b invalid
		tp3      []string
		wantNACK []string // substrings of the NACK; none for an ACK
	}
	steps := []step{
		{names: []string{"a", "b", "c", "d", "e"}},
		{names: []string{"a", "b", "c!", "d", "e"}},
		{names: []string{"a", "b", "c", "d", "e"}},
		{names: []string{"a", "b", "d", "e"}},
		{names: []string{"a", "b", "d", "e", "f"}},
		{names: []string{"b", "a", "d", "e", "f"}},
		// b again where d was: the names before it agree with the last
		// response's, the repeat is of one of them.
		{names: []string{"b", "a", "b", "e", "f"}, wantNACK: []string{`name "b": duplicate resource name "b"`}},
		// f first, where b was, and again at its own index.
		{names: []string{"f", "a", "d", "e", "f"}, wantNACK: []string{`name "f": duplicate resource name "f"`}},
		{names: []string{"a", "b", "c", "d", "e"}, tp3: []string{"f"}},
		{names: []string{"a", "b", "c", "d", "e"}, tp3: []string{"f"}},
		{names: []string{"a", "b", "c", "d", "e"}},
		{names: []string{"a", "b", "c", "d", "e"}},
		{names: []string{"a", "b", "c", "d"}, tp3: []string{"e"}},
		{names: []string{"a", "b", "c"}},
		// Every name at its index, but fewer of them.
		{names: []string{"a", "b"}},
		{names: []string{"a", "b"}},
		{names: []string{"a", "b?"}, wantNACK: []string{`name "b": invalid`}},
		{names: []string{"a", "b"}},
		// A TP3 entry for a name also sent as a resource, all else the same.
		{names: []string{"a", "b"}, tp3: []string{"a"}, wantNACK: []string{`name "a": duplicate resource name "a"`}},
		{names: []string{"a", "b", "c", "d", "e", "f"}},
		{names: []string{"a", "b", "c", "d", "e", "f"}},
	}
	watched := []string{"a", "b", "c", "d", "e", "f"}

	for _, pad := range []int{0, 200, 8200} {
		t.Run(fmt.Sprintf("pad%d", pad), func(t *testing.T) {
			if pad > 0 {
				// Two processors: a response of more than 128 resources to
				// decode is then decoded while it is applied.
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			}
			f := newFixture(t, fixtureOpts{})
			var all []string
			for i := 0; i < pad; i++ {
				all = append(all, fmt.Sprintf("pad%05d", i))
			}
			all = append(all, watched...)
			for _, name := range all {
				f.watch(required, name)
			}
			st := f.servers[0].WaitStream(t)
			slices.Sort(all)
			recvNames(t, st, required, all...)
			cached := map[string]bool{} // given a valid value at some step

			for i, s := range steps {
				var resources []*anypb.Any
				padValue := fmt.Sprint(i)
				if pad > 200 {
					padValue = "same"
				}
				for p := 0; p < pad; p++ {
					resources = append(resources, res(required, fmt.Sprintf("pad%05d", p), "v", padValue))
				}
				for _, n := range s.names {
					switch {
					case strings.HasSuffix(n, "!"):
						resources = append(resources, res(required, strings.TrimSuffix(n, "!"), "v", fmt.Sprint("changed at ", i)))
					case strings.HasSuffix(n, "?"):
						resources = append(resources, res(required, strings.TrimSuffix(n, "?"), "v", "bad", "invalid", "bad"))
					default:
						resources = append(resources, res(required, n, "v", "1"))
					}
				}
				r := resp(required, fmt.Sprint(i+1), resources...)
				for _, n := range s.tp3 {
					r.ResourceErrors = append(r.ResourceErrors, scriptedads.ResourceError(n, codes.Unavailable, "not now"))
				}
				nonce := st.SendT(t, r)
				answer := waitRequest(t, st, func(r *discoverypb.DiscoveryRequest) bool { return r.GetResponseNonce() == nonce })

				nack := answer.GetErrorDetail().GetMessage()
				if len(s.wantNACK) == 0 && answer.GetErrorDetail() != nil {
					t.Errorf("step %d %v: NACK %q, want an ACK", i, s.names, nack)
				}
				for _, want := range s.wantNACK {
					if !strings.Contains(nack, want) {
						t.Errorf("step %d %v: NACK %q does not say %q", i, s.names, nack, want)
					}
				}

				// The answer follows the response's application: what it
				// deleted is deleted now.
				named := slices.Clone(s.tp3)
				for _, n := range s.names {
					named = append(named, strings.TrimRight(n, "!?"))
					if !strings.HasSuffix(n, "?") {
						cached[strings.TrimRight(n, "!")] = true
					}
				}
				checked := watched
				if pad > 0 {
					// Named in every response: never deleted.
					checked = append(slices.Clip(checked), "pad00000", fmt.Sprintf("pad%05d", pad-1))
				}
				for _, name := range checked {
					details := f.eng.ResourceStatus(required, name).GetErrorState().GetDetails()
					deleted := strings.Contains(details, "deleted by the xDS server")
					// Deletion keeps the value (no fail_on_data_errors), and
					// only a value can be deleted.
					if want := cached[name] && !slices.Contains(named, name); deleted != want {
						t.Errorf("step %d %v, tp3 %v: %s deleted = %v, want %v (error state %q)", i, s.names, s.tp3, name, deleted, want, details)
					}
				}
			}
		})
	}
}

// TestDeletionsAmongMarkedEntries: a SotW response's deletions are the
// watched entries holding a value that it did not name, found behind the
// entries it marked in their authority's marked order. Responses here
// name random subsets in random orders, some of them larger than a part,
// while other names are watched and cancelled between them (entries
// added at the back of the order and taken out of it); after each, the
// names deleted are exactly those cached and not named.
func TestDeletionsAmongMarkedEntries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names int
	}{
		{"one part", 40},
		{"parts", 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			rng := rand.New(rand.NewPCG(uint64(tc.names), 1))
			var watched []string
			for i := 0; i < tc.names; i++ {
				name := fmt.Sprintf("n%04d", i)
				watched = append(watched, name)
				f.watch(required, name)
			}
			st := f.servers[0].WaitStream(t)
			recvNames(t, st, required, watched...)
			cached := map[string]bool{}
			churn := map[string]func(){} // watched, never sent
			for step := 0; step < 25; step++ {
				for i := 0; i < 3; i++ {
					name := fmt.Sprintf("x%d", rng.IntN(8))
					if cancel, ok := churn[name]; ok {
						cancel()
						delete(churn, name)
					} else {
						_, churn[name] = f.watch(required, name)
					}
				}
				var named []string
				switch {
				case step == 0 || step%7 == 3:
					named = slices.Clone(watched)
				default:
					for _, name := range watched {
						if rng.IntN(4) > 0 {
							named = append(named, name)
						}
					}
				}
				rng.Shuffle(len(named), func(i, j int) { named[i], named[j] = named[j], named[i] })
				var resources []*anypb.Any
				for _, name := range named {
					resources = append(resources, res(required, name, "v", fmt.Sprint(step)))
					cached[name] = true
				}
				nonce := st.SendT(t, resp(required, fmt.Sprint(step+1), resources...))
				waitRequest(t, st, func(r *discoverypb.DiscoveryRequest) bool { return r.GetResponseNonce() == nonce })
				for _, name := range watched {
					details := f.eng.ResourceStatus(required, name).GetErrorState().GetDetails()
					deleted := strings.Contains(details, "deleted by the xDS server")
					if want := cached[name] && !slices.Contains(named, name); deleted != want {
						t.Fatalf("step %d: %s deleted = %v, want %v (%d of %d named)", step, name, deleted, want, len(named), len(watched))
					}
				}
			}
		})
	}
}
