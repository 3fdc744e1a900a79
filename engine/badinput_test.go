package engine_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// badCase is one malformed or hostile response. The engine watches "a"
// and "b" of the case's type, both cached at version "1", then receives
// the case's response.
type badCase struct {
	name string
	// typeURL is thing (EDS-like) or required (LDS/CDS-like: a cached
	// resource missing from a response is deleted).
	typeURL string
	// resources are sent after a and b, unchanged, unless omitAB.
	resources []*anypb.Any
	errors    []*discoverypb.ResourceError
	// omitAB leaves a and b out and sends a changed "a" first, to test
	// deletion by absence: b must survive whenever a resource's name was
	// unknown.
	omitAB bool
	// raw, if set, is sent instead of a DiscoveryResponse built from the
	// fields above.
	raw []byte
	// nonce and version, when set, override the response's.
	nonce, version string

	// wantNACK are substrings of the answering NACK; nil means an ACK.
	wantNACK []string
	// wantNoAnswer: the response cannot be answered (no type, or one
	// this engine does not know), so no request follows.
	wantNoAnswer bool
	// wantNonce is the answer's response_nonce when it is not the sent one.
	wantNonce *string
	// wantAmbientAB: a and b's watchers hear of the failure as an ambient
	// NACK (the response could not be read, so any watched resource of
	// the type may have been in it).
	wantAmbientAB bool
	// maxRequestBytes bounds the answering request's size.
	maxRequestBytes int
	// bulk: a 100,000-entry case, run once.
	bulk bool
}

func wireResp(typeURL, version, nonce string, resources ...*anypb.Any) []byte {
	b, err := proto.Marshal(&discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce, Resources: resources})
	if err != nil {
		panic(err)
	}
	return b
}

// rawString appends a length-delimited field of arbitrary bytes, for
// strings that proto.Marshal would refuse (invalid UTF-8).
func rawString(b []byte, num protowire.Number, v string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

// deepStruct is a Struct nested past protobuf-go's recursion limit
// (10,000), named "deep" at the top: it does not decode, so its name
// cannot be learned.
func deepStruct() []byte {
	v := structpb.NewStringValue("leaf")
	for i := 0; i < 10_050; i++ {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	s := &structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue("deep"), "x": v}}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

func wrapperAny(w *discoverypb.Resource) *anypb.Any {
	b, err := proto.Marshal(w)
	if err != nil {
		panic(err)
	}
	return &anypb.Any{TypeUrl: "type.googleapis.com/envoy.service.discovery.v3.Resource", Value: b}
}

func badInputCases() []badCase { return badInputTable(true) }

// badInputTable builds the table; without bulk, the 100,000-entry cases
// are left out, and not even built: under -race that alone takes seconds.
func badInputTable(bulk bool) []badCase {
	invalidUTF8 := "bad-\xff\xfe-utf8"
	huge := strings.Repeat("n", 1<<20)
	longNonce := strings.Repeat("z", 64<<10)
	deep := deepStruct()
	many := func(n int, mk func(i int) *anypb.Any) []*anypb.Any {
		if !bulk {
			return nil
		}
		out := make([]*anypb.Any, n)
		for i := range out {
			out[i] = mk(i)
		}
		return out
	}
	tp3 := func(name string, code codes.Code, msg string) *discoverypb.ResourceError {
		return scriptedads.ResourceError(name, code, msg)
	}
	manyErrors := func(n int, e *discoverypb.ResourceError) []*discoverypb.ResourceError {
		if !bulk {
			return nil
		}
		out := make([]*discoverypb.ResourceError, n)
		for i := range out {
			out[i] = e
		}
		return out
	}
	str := func(s string) *string { return &s }

	var cases []badCase
	for _, typeURL := range []string{thing, required} {
		kind := "EDS-like"
		if typeURL == required {
			kind = "LDS-like"
		}
		r := func(name string, kv ...any) *anypb.Any { return res(typeURL, name, kv...) }
		add := func(c badCase) {
			if c.bulk && !bulk {
				return
			}
			c.name = kind + "/" + c.name
			c.typeURL = typeURL
			cases = append(cases, c)
		}
		// Resources whose name cannot be learned (defect 1): NACKed, and
		// nothing is deleted by its absence.
		add(badCase{name: "any of another type, b absent", omitAB: true,
			resources: []*anypb.Any{{TypeUrl: "type.googleapis.com/google.protobuf.Duration"}},
			wantNACK:  []string{"resource index 1:", `"type.googleapis.com/google.protobuf.Duration" in a response of type`}})
		add(badCase{name: "bytes that do not parse, b absent", omitAB: true,
			resources: []*anypb.Any{{TypeUrl: typeURL, Value: []byte{0xff, 0xff}}},
			wantNACK:  []string{"resource index 1:", "unmarshal"}})
		add(badCase{name: "nested past the recursion limit, b absent", omitAB: true,
			resources: []*anypb.Any{{TypeUrl: typeURL, Value: deep}},
			wantNACK:  []string{"resource index 1:", "unmarshal", "recursion"}})
		add(badCase{name: "truncated resource, b absent", omitAB: true,
			resources: []*anypb.Any{{TypeUrl: typeURL, Value: r("trunc").GetValue()[:5]}},
			wantNACK:  []string{"resource index 1:", "unmarshal"}})
		add(badCase{name: "empty Any, b absent", omitAB: true,
			resources: []*anypb.Any{{}},
			wantNACK:  []string{"resource index 1:", `resource type "" in a response`}})
		add(badCase{name: "resource without a name, b absent", omitAB: true,
			resources: []*anypb.Any{r("")},
			wantNACK:  []string{"resource index 1:", "no name"}})
		add(badCase{name: "wrapper that does not parse, b absent", omitAB: true,
			resources: []*anypb.Any{{TypeUrl: "type.googleapis.com/envoy.service.discovery.v3.Resource", Value: []byte{0x0a, 0x09, 0x01}}},
			wantNACK:  []string{"resource index 1:", "Resource wrapper does not parse"}})
		add(badCase{name: "wrapper with an invalid UTF-8 name, b absent", omitAB: true,
			resources: []*anypb.Any{{TypeUrl: "type.googleapis.com/envoy.service.discovery.v3.Resource", Value: rawString(nil, 3, invalidUTF8)}},
			wantNACK:  []string{"resource index 1:", "Resource wrapper does not parse"}})
		add(badCase{name: "resource name of invalid UTF-8, b absent", omitAB: true,
			resources: []*anypb.Any{{TypeUrl: typeURL, Value: rawString(nil, 1, "\x0a\x04name\x12\x0b\x1a\x09"+invalidUTF8)}},
			wantNACK:  []string{"resource index 1:", "unmarshal"}})
		add(badCase{name: "deep resource inside a named wrapper",
			resources: []*anypb.Any{scriptedads.Wrap("w-deep", &anypb.Any{TypeUrl: typeURL, Value: deep})},
			wantNACK:  []string{`resource index 2, name "w-deep":`, "recursion"}})

		// Wrappers.
		add(badCase{name: "wrapper without resource",
			resources: []*anypb.Any{scriptedads.Wrap("w", nil)},
			wantNACK:  []string{`resource index 2, name "w"`, "holds no resource"}})
		add(badCase{name: "wrapper around another type",
			resources: []*anypb.Any{scriptedads.Wrap("w", &anypb.Any{TypeUrl: "type.googleapis.com/google.protobuf.Empty"})},
			wantNACK:  []string{`resource index 2, name "w"`, "google.protobuf.Empty"}})
		add(badCase{name: "wrapper inside a wrapper",
			resources: []*anypb.Any{scriptedads.Wrap("w", scriptedads.Wrap("w", r("w")))},
			wantNACK:  []string{`resource index 2, name "w"`, "envoy.service.discovery.v3.Resource"}})
		add(badCase{name: "wrapper name differs from the resource's",
			resources: []*anypb.Any{scriptedads.Wrap("w", r("other"))},
			wantNACK:  []string{`resource index 2, name "w"`, `resource name "other" does not match its Resource wrapper's name "w"`}})
		add(badCase{name: "wrapper with a huge name",
			resources: []*anypb.Any{scriptedads.Wrap(huge, nil)},
			wantNACK:  []string{"resource index 2, name \"nnnn", "(1048576 bytes)", "holds no resource"}, maxRequestBytes: 8 << 10})
		add(badCase{name: "wrapper named only by resource_name, valid",
			resources: []*anypb.Any{wrapperAny(&discoverypb.Resource{ResourceName: &discoverypb.ResourceName{Name: "rn"}, Resource: r("")})}})
		add(badCase{name: "wrapper name of an unknown authority",
			resources: []*anypb.Any{scriptedads.Wrap("xdstp://nowhere.example/"+strings.TrimPrefix(typeURL, "type.googleapis.com/")+"/x", r(""))},
			wantNACK:  []string{"resource index 2", `authority "nowhere.example" is not in the bootstrap`}})

		// Type URLs.
		add(badCase{name: "type URL without its prefix",
			resources: []*anypb.Any{{TypeUrl: strings.TrimPrefix(typeURL, "type.googleapis.com/"), Value: r("x").GetValue()}},
			wantNACK:  []string{"resource index 2:", "in a response of type"}})
		add(badCase{name: "type URL with an empty message name",
			resources: []*anypb.Any{{TypeUrl: "type.googleapis.com/", Value: r("x").GetValue()}},
			wantNACK:  []string{"resource index 2:", `"type.googleapis.com/" in a response`}})
		add(badCase{name: "resource of the other test type",
			resources: []*anypb.Any{res(map[string]string{thing: required, required: thing}[typeURL], "x")},
			wantNACK:  []string{"resource index 2:", "in a response of type"}})
		add(badCase{name: "response of an unregistered type", raw: wireResp("type.googleapis.com/unknown.Type", "2", "n1", r("a")), wantNoAnswer: true})
		add(badCase{name: "response without a type", raw: wireResp("", "2", "n1", r("a")), wantNoAnswer: true})

		// Names.
		add(badCase{name: "duplicate name (defect 2)",
			resources: []*anypb.Any{r("x", "v", "1"), r("x", "v", "2")},
			wantNACK:  []string{`resource index 3, name "x": duplicate resource name "x"`}})
		add(badCase{name: "duplicate of a cached resource",
			resources: []*anypb.Any{r("a", "v", "other")},
			wantNACK:  []string{`resource index 2, name "a": duplicate resource name "a"`}})
		add(badCase{name: "duplicate through a wrapper",
			resources: []*anypb.Any{r("x"), scriptedads.Wrap("x", r(""))},
			wantNACK:  []string{`resource index 3, name "x": duplicate resource name "x"`}})
		add(badCase{name: "100,000 copies of one name", bulk: true,
			resources: many(100_000, func(int) *anypb.Any { return r("x") }),
			wantNACK:  []string{`duplicate resource name "x"`, "and 99899 more"}, maxRequestBytes: 64 << 10})
		add(badCase{name: "unparsable xdstp name",
			resources: []*anypb.Any{r("xdstp://")},
			wantNACK:  []string{`name "xdstp://": unable to parse resource name`}})
		add(badCase{name: "xdstp name of an unknown authority",
			resources: []*anypb.Any{r("xdstp://nowhere.example/" + strings.TrimPrefix(typeURL, "type.googleapis.com/") + "/x")},
			wantNACK:  []string{`authority "nowhere.example" is not in the bootstrap`}})
		add(badCase{name: "huge name, valid", resources: []*anypb.Any{r(huge)}, maxRequestBytes: 8 << 10})
		add(badCase{name: "huge name, invalid",
			resources: []*anypb.Any{r(huge, "invalid", "x")},
			wantNACK:  []string{"(1048576 bytes)", "invalid: x"}, maxRequestBytes: 8 << 10})
		add(badCase{name: "100,000 valid resources nobody watches", bulk: true,
			resources: many(100_000, func(i int) *anypb.Any { return r("n" + strconv.Itoa(i)) })})
		add(badCase{name: "100,000 invalid resources", bulk: true,
			resources: many(100_000, func(i int) *anypb.Any { return r("n"+strconv.Itoa(i), "invalid", "bad") }),
			wantNACK:  []string{`resource index 2, name "n0": invalid: bad`, "and 99900 more"}, maxRequestBytes: 64 << 10})
		add(badCase{name: "validation error of a megabyte",
			resources: []*anypb.Any{r("x", "invalid", huge)},
			wantNACK:  []string{`name "x": invalid: nnnn`}, maxRequestBytes: 8 << 10})

		// Envelopes.
		add(badCase{name: "64 KiB nonce", nonce: longNonce})
		add(badCase{name: "64 KiB version", version: longNonce})
		add(badCase{name: "empty nonce and version", raw: wireResp(typeURL, "", "", r("a"), r("b")), wantNonce: str("")})
		add(badCase{name: "nonce of invalid UTF-8",
			raw:       rawString(wireResp(typeURL, "2", "", r("a"), r("b")), 5, "n-\xff"),
			wantNACK:  []string{"does not parse", "invalid UTF-8"},
			wantNonce: str("n-\uFFFD"), wantAmbientAB: true})
		add(badCase{name: "version of invalid UTF-8",
			raw:      rawString(wireResp(typeURL, "", "n-v", r("a"), r("b")), 1, "v-\xff"),
			wantNACK: []string{"does not parse", "invalid UTF-8"}, wantNonce: str("n-v"), wantAmbientAB: true})
		add(badCase{name: "type URL of invalid UTF-8", raw: rawString(nil, 4, "t-\xff"), wantNoAnswer: true})
		add(badCase{name: "envelope cut short after its nonce",
			raw:      append(rawString(rawString(nil, 4, typeURL), 5, "n-cut"), 0x12, 0x40, 0x0a),
			wantNACK: []string{"does not parse"}, wantNonce: str("n-cut"), wantAmbientAB: true})
		goodEnvelope := wireResp(typeURL, "2", "n-cut", r("a"), r("b"))
		add(badCase{name: "envelope cut in the middle", raw: goodEnvelope[:len(goodEnvelope)/2], wantNoAnswer: true})
		add(badCase{name: "garbage", raw: []byte{0xff, 0xff, 0xff, 0xff}, wantNoAnswer: true})
		add(badCase{name: "empty message", raw: []byte{}, wantNoAnswer: true})

		// xRFC TP3 entries that are not errors (defect 3), and others.
		add(badCase{name: "TP3 without resource_name",
			errors:   []*discoverypb.ResourceError{tp3("", codes.NotFound, "x")},
			wantNACK: []string{"resource_errors index 0: resource_name unset"}})
		add(badCase{name: "TP3 without resource_name, b absent", omitAB: true,
			errors:   []*discoverypb.ResourceError{tp3("", codes.NotFound, "x")},
			wantNACK: []string{"resource_errors index 0: resource_name unset"}})
		add(badCase{name: "TP3 with code OK",
			errors:   []*discoverypb.ResourceError{tp3("x", codes.OK, "fine")},
			wantNACK: []string{`resource_errors index 0, name "x": error_detail must be non-OK`}})
		add(badCase{name: "TP3 with code OK for a cached resource",
			errors:   []*discoverypb.ResourceError{tp3("a", codes.OK, "fine")},
			wantNACK: []string{`resource_errors index 0, name "a": error_detail must be non-OK`}})
		add(badCase{name: "TP3 without error_detail",
			errors:   []*discoverypb.ResourceError{{ResourceName: &discoverypb.ResourceName{Name: "x"}}},
			wantNACK: []string{`name "x": error_detail must be non-OK`}})
		add(badCase{name: "TP3 with code 99",
			errors:   []*discoverypb.ResourceError{{ResourceName: &discoverypb.ResourceName{Name: "x"}, ErrorDetail: &rpcstatus.Status{Code: 99}}},
			wantNACK: []string{`name "x": error_detail code 99 is not a gRPC status code`}})
		add(badCase{name: "TP3 with an unparsable name",
			errors:   []*discoverypb.ResourceError{tp3("xdstp://", codes.NotFound, "x")},
			wantNACK: []string{`resource_errors index 0, name "xdstp://": cannot parse xDS resource name`}})
		add(badCase{name: "TP3 for a resource also sent",
			resources: []*anypb.Any{r("x")},
			errors:    []*discoverypb.ResourceError{tp3("x", codes.NotFound, "gone")},
			wantNACK:  []string{`resource_errors index 0, name "x": duplicate resource name "x"`}})
		add(badCase{name: "TP3 for an unwatched resource, valid",
			errors: []*discoverypb.ResourceError{tp3("x", codes.NotFound, "no such resource")}})
		add(badCase{name: "100,000 TP3 entries with code OK", bulk: true,
			errors:   manyErrors(100_000, tp3("x", codes.OK, "")),
			wantNACK: []string{"error_detail must be non-OK", "and 99900 more"}, maxRequestBytes: 64 << 10})
		add(badCase{name: "TP3 with a megabyte message, valid",
			errors: []*discoverypb.ResourceError{tp3("x", codes.Unavailable, huge)}})

		// Sane inputs around the bad ones: the table checks them too.
		add(badCase{name: "valid resource nobody watches", resources: []*anypb.Any{r("x")}})
	}
	return cases
}

// response is the DiscoveryResponse of a case without raw bytes. FuzzResponse
// uses it too, to seed its corpus with the table.
func (tc badCase) response() *discoverypb.DiscoveryResponse {
	r := &discoverypb.DiscoveryResponse{TypeUrl: tc.typeURL, VersionInfo: "2", Nonce: "n-bad", ResourceErrors: tc.errors}
	if tc.nonce != "" {
		r.Nonce = tc.nonce
	}
	if tc.version != "" {
		r.VersionInfo = tc.version
	}
	if tc.omitAB {
		r.Resources = append(r.Resources, res(tc.typeURL, "a", "v", "changed"))
	} else {
		r.Resources = append(r.Resources, res(tc.typeURL, "a"), res(tc.typeURL, "b"))
	}
	r.Resources = append(r.Resources, tc.resources...)
	return r
}

// TestBadInput sends each malformed response to an engine that has "a"
// and "b" cached, with and without fail_on_data_errors, and checks the
// answer (the NACK's text, or an ACK) and that nothing cached was lost:
// a and b stay cached and their watchers are told nothing but, where the
// response could not be read at all, an ambient NACK. The engine then
// still takes updates.
func TestBadInput(t *testing.T) {
	cases := badInputCases()
	if len(cases) < 50 {
		t.Fatalf("only %d bad inputs", len(cases))
	}
	for _, features := range [][]string{nil, {"fail_on_data_errors"}} {
		for _, tc := range cases {
			if tc.bulk && (features != nil || tc.typeURL != thing) {
				continue // neither features nor type play a part; once is enough
			}
			t.Run(fmt.Sprintf("%s/features=%v", tc.name, features), func(t *testing.T) {
				runBadInput(t, tc, features)
			})
		}
	}
}

func runBadInput(t *testing.T, tc badCase, serverFeatures []string) {
	f := newFixture(t, fixtureOpts{serverFeatures: serverFeatures})
	wa, _ := f.watch(tc.typeURL, "a")
	wb, _ := f.watch(tc.typeURL, "b")
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, tc.typeURL, "a", "b")
	n1 := st.SendT(t, resp(tc.typeURL, "1", res(tc.typeURL, "a"), res(tc.typeURL, "b")))
	wa.NextChanged(t)
	wb.NextChanged(t)
	wantRequest(t, st.RecvT(t), tc.typeURL, "1", n1, "a", "b")

	sentNonce := "n-bad"
	if tc.raw != nil {
		st.SendRawT(t, tc.raw)
	} else {
		r := tc.response()
		sentNonce = r.GetNonce()
		st.SendT(t, r)
	}
	if tc.wantNonce != nil {
		sentNonce = *tc.wantNonce
	}

	// The next request answers the bad response, unless there is no
	// answer; then it is the answer to the valid update sent below.
	var req *discoverypb.DiscoveryRequest
	if !tc.wantNoAnswer {
		req = st.RecvT(t)
		if req.GetResponseNonce() != sentNonce {
			t.Fatalf("answer's nonce = %.40q (%d bytes), want %.40q", req.GetResponseNonce(), len(req.GetResponseNonce()), sentNonce)
		}
		if tc.maxRequestBytes > 0 {
			if n := proto.Size(req); n > tc.maxRequestBytes {
				t.Errorf("answering request is %d bytes, want at most %d", n, tc.maxRequestBytes)
			}
		}
		detail := req.GetErrorDetail()
		switch {
		case tc.wantNACK == nil && detail != nil:
			t.Fatalf("got NACK %.300q, want ACK", detail.GetMessage())
		case tc.wantNACK != nil && detail == nil:
			t.Fatalf("got ACK, want NACK containing %q", tc.wantNACK)
		case detail != nil && codes.Code(detail.GetCode()) != codes.InvalidArgument:
			t.Fatalf("NACK code %v, want INVALID_ARGUMENT", codes.Code(detail.GetCode()))
		}
		for _, want := range tc.wantNACK {
			if !strings.Contains(detail.GetMessage(), want) {
				t.Errorf("NACK %.600q does not contain %q", detail.GetMessage(), want)
			}
		}
	}

	// Nothing cached was lost.
	if tc.omitAB {
		if ev := wa.NextChanged(t); ev.Err != nil || ev.Resource.(*testtype.Resource).Fields["v"] != "changed" {
			t.Fatalf("a: got %v, want the changed resource (the valid part of the response applies)", ev)
		}
	}
	for _, name := range []string{"a", "b"} {
		state := adminpb.ClientResourceStatus_ACKED
		if tc.wantAmbientAB {
			state = adminpb.ClientResourceStatus_NACKED
		}
		checkDump(t, f.eng, tc.typeURL, name, state, true)
	}

	// The engine still takes updates, and a and b's watchers heard
	// nothing of the bad response but what the case expects: callbacks
	// are delivered in order, so anything else would come first.
	n3 := st.SendT(t, resp(tc.typeURL, "3", res(tc.typeURL, "a", "v", "3"), res(tc.typeURL, "b", "v", "3")))
	for name, w := range map[string]*watchrec.Recorder{"a": wa, "b": wb} {
		if tc.wantAmbientAB {
			checkEvent(t, w.NextAmbient(t), true, codes.InvalidArgument)
		}
		if ev := w.NextChanged(t); ev.Err != nil || ev.Resource.(*testtype.Resource).Fields["v"] != "3" {
			t.Fatalf("%s: got %v, want version 3", name, ev)
		}
	}
	if req == nil {
		req = st.RecvT(t)
		if req.GetResponseNonce() != n3 {
			t.Fatalf("got a request with nonce %.40q before the answer to the valid update: the bad response was answered", req.GetResponseNonce())
		}
	} else {
		req = st.RecvT(t)
	}
	wantRequest(t, req, tc.typeURL, "3", n3, "a", "b")
	if req.GetErrorDetail() != nil {
		t.Fatalf("valid update NACKed: %v", req.GetErrorDetail())
	}
}
