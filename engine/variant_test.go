package engine_test

import (
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
)

// protocol is an ADS protocol variant as the table-driven tests drive it:
// the server features that select it, and its scripted server streams.
type protocol struct {
	name     string
	features []string
	wait     func(t *testing.T, srv *scriptedads.Server) adsStream
	// streams counts the variant's streams the server has seen opened.
	streams func(srv *scriptedads.Server) int
}

var protocols = []protocol{
	{"sotw", nil, func(t *testing.T, srv *scriptedads.Server) adsStream { return sotwStream{srv.WaitStream(t)} },
		(*scriptedads.Server).StreamCount},
	{"delta", []string{features.NameDeltaXDS}, func(t *testing.T, srv *scriptedads.Server) adsStream { return deltaStream{srv.WaitDeltaStream(t)} },
		(*scriptedads.Server).DeltaStreamCount},
}

// adsStream is one scripted server stream of either variant.
type adsStream interface {
	// recv reads the next request.
	recv(t *testing.T) proto.Message
	// send sends resources (testtype Anys) at version; it returns the
	// nonce.
	send(t *testing.T, typeURL, version string, resources ...*anypb.Any) string
	// sendErrors sends xRFC TP3 errors only.
	sendErrors(t *testing.T, typeURL, version string, errs ...*discoverypb.ResourceError) string
	// remove says that the server deleted name, a resource it sent
	// before with the others in keep: SotW sends a response without it
	// (which deletes only for LDS/CDS-like types), delta names it in
	// removed_resources.
	remove(t *testing.T, typeURL, version, name string, keep ...*anypb.Any) string
	close(err error)
	done() <-chan struct{}
}

type sotwStream struct{ st *scriptedads.Stream }

func (s sotwStream) recv(t *testing.T) proto.Message { t.Helper(); return s.st.RecvT(t) }
func (s sotwStream) send(t *testing.T, typeURL, version string, rs ...*anypb.Any) string {
	t.Helper()
	return s.st.SendT(t, resp(typeURL, version, rs...))
}
func (s sotwStream) sendErrors(t *testing.T, typeURL, version string, errs ...*discoverypb.ResourceError) string {
	t.Helper()
	r := resp(typeURL, version)
	r.ResourceErrors = errs
	return s.st.SendT(t, r)
}
func (s sotwStream) remove(t *testing.T, typeURL, version, _ string, keep ...*anypb.Any) string {
	t.Helper()
	return s.st.SendT(t, resp(typeURL, version, keep...))
}
func (s sotwStream) close(err error)       { s.st.Close(err) }
func (s sotwStream) done() <-chan struct{} { return s.st.Done() }

type deltaStream struct{ st *scriptedads.DeltaStream }

func (s deltaStream) recv(t *testing.T) proto.Message { t.Helper(); return s.st.RecvT(t) }
func (s deltaStream) send(t *testing.T, typeURL, version string, rs ...*anypb.Any) string {
	t.Helper()
	return s.st.SendT(t, scriptedads.DeltaResponse(typeURL, version, deltaResources(t, version, rs)))
}
func (s deltaStream) sendErrors(t *testing.T, typeURL, version string, errs ...*discoverypb.ResourceError) string {
	t.Helper()
	r := scriptedads.DeltaResponse(typeURL, version, nil)
	r.ResourceErrors = errs
	return s.st.SendT(t, r)
}
func (s deltaStream) remove(t *testing.T, typeURL, version, name string, _ ...*anypb.Any) string {
	t.Helper()
	return s.st.SendT(t, scriptedads.DeltaResponse(typeURL, version, nil, name))
}
func (s deltaStream) close(err error)       { s.st.Close(err) }
func (s deltaStream) done() <-chan struct{} { return s.st.Done() }

// deltaResources puts testtype resources into delta Resource entries,
// named as the resources name themselves, each at version.
func deltaResources(t *testing.T, version string, rs []*anypb.Any) []*discoverypb.Resource {
	t.Helper()
	var out []*discoverypb.Resource
	for _, a := range rs {
		var st structpb.Struct
		if err := proto.Unmarshal(a.GetValue(), &st); err != nil {
			t.Fatalf("testtype resource: %v", err)
		}
		out = append(out, &discoverypb.Resource{Name: st.GetFields()["name"].GetStringValue(), Version: version, Resource: a})
	}
	return out
}
