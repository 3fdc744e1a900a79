package engine_test

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

// TestLargeResponseSameWhenPipelined: with two processors, a large
// response is decoded while it is applied (the resources checked and
// applied part by part as they are decoded); with one, it is decoded
// whole first. Both must end the same way: the same NACK, the same
// version, and every watcher told the same things in the same order. The
// response holds what makes order matter: an invalid resource, a second
// resource of one name, TP3 entries (one for a name also sent as a
// resource), a left-out resource (deleted, unless the response is
// incomplete) and, in one case, a resource of the wrong type whose name
// cannot be learned.
func TestLargeResponseSameWhenPipelined(t *testing.T) {
	for _, tc := range []struct {
		name       string
		incomplete bool
	}{
		{"complete", false},
		{"incomplete", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serial := runLargeResponse(t, 1, tc.incomplete)
			pipelined := runLargeResponse(t, 2, tc.incomplete)
			if diff := cmp.Diff(serial, pipelined); diff != "" {
				t.Errorf("one processor (-) and two (+) differ:\n%s", diff)
			}
			// What both must show, beyond agreeing.
			if !contains(serial.NACK, "r10150") || !contains(serial.NACK, "duplicate resource name") || !contains(serial.NACK, "resource_errors") {
				t.Errorf("NACK %q does not name the invalid resource, the duplicate and the TP3 duplicate", serial.NACK)
			}
			if serial.Version != "2" {
				t.Errorf("version after the response = %q, want 2 (valid resources accept it)", serial.Version)
			}
		})
	}
}

// largeResponseOutcome is what a run of runLargeResponse saw.
type largeResponseOutcome struct {
	NACK, Version string
	Events        map[string][]string // per name, in order
}

func runLargeResponse(t *testing.T, procs int, incomplete bool) largeResponseOutcome {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	const n = 400
	f := newFixture(t, fixtureOpts{})
	var mu sync.Mutex
	out := largeResponseOutcome{Events: map[string][]string{}}
	record := func(name, what string) {
		mu.Lock()
		out.Events[name] = append(out.Events[name], what)
		mu.Unlock()
	}
	errName := func(err error) string {
		var ee *engine.Error
		if errors.As(err, &ee) {
			return ee.Name
		}
		return "?"
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "r" + strconv.Itoa(10000+i)
		name := names[i]
		f.eng.Watch(required, name, engine.WatcherFuncs{
			ResourceChanged: func(r registry.Resource, err error, done func()) {
				defer done()
				if err != nil {
					record(errName(err), "changed-error "+status.Code(err).String())
					return
				}
				record(name, fmt.Sprint("value ", r.(*testtype.Resource).Fields["v"]))
			},
			AmbientError: func(err error, done func()) {
				defer done()
				record(errName(err), "ambient "+status.Code(err).String())
			},
		})
	}
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, required, names...)

	var v1 []*anypb.Any
	for _, name := range names {
		v1 = append(v1, res(required, name, "v", "1"))
	}
	n1 := st.SendT(t, resp(required, "1", v1...))
	waitRequest(t, st, func(r *discoverypb.DiscoveryRequest) bool { return r.GetResponseNonce() == n1 })

	var v2 []*anypb.Any
	for i, name := range names[:n-2] { // n-2: a TP3 entry; n-1: left out
		switch i {
		case 150:
			v2 = append(v2, res(required, name, "v", "2", "invalid", "bad"))
			continue
		case 200:
			if incomplete {
				v2 = append(v2, res(thing, "of-another-type"))
			}
		case 300:
			v2 = append(v2, res(required, names[5], "v", "second"))
		}
		v2 = append(v2, res(required, name, "v", "2"))
	}
	r2 := resp(required, "2", v2...)
	r2.ResourceErrors = []*discoverypb.ResourceError{
		scriptedads.ResourceError(names[n-2], codes.Unavailable, "not now"),
		scriptedads.ResourceError(names[7], codes.NotFound, "also sent"),
	}
	n2 := st.SendT(t, r2)
	answer := waitRequest(t, st, func(r *discoverypb.DiscoveryRequest) bool { return r.GetResponseNonce() == n2 })
	out.NACK, out.Version = answer.GetErrorDetail().GetMessage(), answer.GetVersionInfo()

	// The last notification of the response: the deletion of the
	// left-out resource, or, if nothing is deleted, the TP3 error.
	last, want := names[n-1], 1 // its first event is the deletion
	if incomplete {
		last = names[n-2]
	}
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		got := len(out.Events[last])
		mu.Unlock()
		if got >= want+1 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d processors: %s was not told of version 2", procs, last)
		}
	}
	// Notifications run in order: once the last one has, so have all.
	f.eng.Close()
	mu.Lock()
	defer mu.Unlock()
	return out
}

// TestLargeResponsesInARow: responses of more than the 8,192 resources
// whose working memory a stream keeps for itself, one after another, so
// that each is read into arrays an earlier one used and gave back (a
// sync.Pool): each changes another third of the resources, and every
// watcher must be told its resource's new value, once, and nothing of
// the others.
func TestLargeResponsesInARow(t *testing.T) {
	const n = 9000
	f := newFixture(t, fixtureOpts{})
	var mu sync.Mutex
	values := make(map[string]string, n)
	var delivered atomic.Int64
	names := make([]string, n)
	for i := range names {
		name := "r" + strconv.Itoa(i)
		names[i] = name
		f.eng.Watch(thing, name, engine.WatcherFuncs{
			ResourceChanged: func(r registry.Resource, err error, done func()) {
				defer done()
				mu.Lock()
				if err != nil {
					values[name] = "error: " + err.Error()
				} else {
					values[name] = fmt.Sprint(r.(*testtype.Resource).Fields["v"])
				}
				mu.Unlock()
				delivered.Add(1)
			},
		})
	}
	st := f.servers[0].WaitStream(t)
	waitRequest(t, st, func(r *discoverypb.DiscoveryRequest) bool { return len(r.GetResourceNames()) == n })

	want := make([]string, n)
	total := int64(0)
	for round := 1; round <= 4; round++ {
		resources := make([]*anypb.Any, n)
		for i := range resources {
			if round == 1 || i%3 == round%3 {
				want[i] = "v" + strconv.Itoa(round)
				total++
			}
			resources[i] = res(thing, names[i], "v", want[i])
		}
		version := strconv.Itoa(round)
		nonce := st.SendT(t, resp(thing, version, resources...))
		ack := waitRequest(t, st, func(r *discoverypb.DiscoveryRequest) bool { return r.GetResponseNonce() == nonce })
		if ack.GetErrorDetail() != nil || ack.GetVersionInfo() != version {
			t.Fatalf("response %d answered with version %q, error %v", round, ack.GetVersionInfo(), ack.GetErrorDetail())
		}
		for start := time.Now(); delivered.Load() < total; time.Sleep(time.Millisecond) {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("response %d: %d deliveries in all, want %d", round, delivered.Load(), total)
			}
		}
		mu.Lock()
		for i, name := range names {
			if values[name] != want[i] {
				mu.Unlock()
				t.Fatalf("after response %d, %s was told %q, want %q", round, name, values[name], want[i])
			}
		}
		mu.Unlock()
	}
	time.Sleep(20 * time.Millisecond) // a late extra delivery
	if got := delivered.Load(); got != total {
		t.Fatalf("%d deliveries, want %d: unchanged resources were delivered again", got, total)
	}
}
