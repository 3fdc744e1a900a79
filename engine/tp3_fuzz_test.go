package engine_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// Bits of FuzzResourceErrors' flags.
const (
	tp3Required      = 1 << iota // a response of the LDS/CDS-like type, else of the EDS-like one
	tp3WithResources             // the response also holds a, b and x, unchanged
	tp3NoDetail1                 // entry 0 has no error_detail
	tp3NoName2                   // entry 1 has no resource_name
	tp3Repeat1                   // entry 0 is repeated as entry 2
)

// tp3Entry is one xRFC TP3 resource_errors entry as the fuzzer made it.
type tp3Entry struct {
	name      string
	hasName   bool
	code      uint32
	msg       string
	hasDetail bool
}

// FuzzResourceErrors sends responses whose xRFC TP3 resource_errors
// entries are built from the fuzz arguments (names, codes and messages of
// any value, including invalid UTF-8), to the engine of fuzzEnv, and
// checks that:
//   - a watcher never sees an error with code OK, or one that is not an
//     *engine.Error (checked for every event);
//   - an entry with no name, code OK or a code past UNAUTHENTICATED (16)
//     is NACKed, and so are an unparsable name and a repeated one; a
//     response without any of these is ACKed;
//   - an entry for a watched name reaches its watchers with the entry's
//     code and leaves it RECEIVED_ERROR, dropped for NOT_FOUND and
//     PERMISSION_DENIED (the server has fail_on_data_errors);
//   - bytes that do not parse (invalid UTF-8) are NACKed and drop nothing;
//   - the engine keeps working.
func FuzzResourceErrors(f *testing.F) {
	x := fuzzXDSTPName(thing)
	for _, s := range []struct {
		flags uint8
		name1 string
		code1 codes.Code
		msg1  string
		name2 string
		code2 codes.Code
		msg2  string
	}{
		{0, "a", codes.NotFound, "gone", "b", codes.Unavailable, "later"},
		{tp3Required, "a", codes.PermissionDenied, "denied", "c", codes.Internal, ""},
		{tp3WithResources, "c", codes.NotFound, "gone", "d", codes.Unavailable, "unwatched"},
		{tp3WithResources, "a", codes.NotFound, "also sent", "c", codes.OK, "fine"},
		{tp3Required | tp3WithResources, "", codes.NotFound, "no name", "c", 17, "past 16"},
		{tp3NoDetail1, "a", codes.NotFound, "", "b", codes.NotFound, ""},
		{tp3NoName2, "a", codes.Unavailable, "", "b", codes.NotFound, ""},
		{tp3Repeat1, "c", codes.NotFound, "twice", "b", codes.ResourceExhausted, ""},
		{0, x, codes.NotFound, "xdstp", fuzzXDSTPWatched(thing), codes.NotFound, "the same, spelled otherwise"},
		{tp3Required, "xdstp://", codes.NotFound, "", "xdstp://nowhere.example/xdsengine.test.RequiredThing/x", codes.NotFound, ""},
		{0, "a", codes.Unavailable, "bad-\xff-utf8", "b", codes.NotFound, ""},
		{tp3Required, "a\xff", codes.NotFound, "", "b", codes.NotFound, ""},
		{0, "a", 1 << 31, "negative as int32", "b", 1<<32 - 1, "-1"},
	} {
		f.Add(s.flags, s.name1, uint32(s.code1), s.msg1, s.name2, uint32(s.code2), s.msg2)
	}
	h := newFuzzEnvHolder(f)
	f.Fuzz(func(t *testing.T, flags uint8, name1 string, code1 uint32, msg1, name2 string, code2 uint32, msg2 string) {
		entries := []tp3Entry{
			{name: name1, hasName: true, code: code1, msg: msg1, hasDetail: flags&tp3NoDetail1 == 0},
			{name: name2, hasName: flags&tp3NoName2 == 0, code: code2, msg: msg2, hasDetail: true},
		}
		if flags&tp3Repeat1 != 0 {
			entries = append(entries, entries[0])
		}
		h.run(t, func(env *fuzzEnv) { env.resourceErrors(t, flags, entries) })
	})
}

func (env *fuzzEnv) resourceErrors(t *testing.T, flags uint8, entries []tp3Entry) {
	typeURL := thing
	if flags&tp3Required != 0 {
		typeURL = required
	}
	withResources := flags&tp3WithResources != 0
	nonce := "e" + strconv.Itoa(env.round)
	r := &discoverypb.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: nonce, Nonce: nonce}
	if withResources {
		for _, name := range fuzzCached(typeURL) {
			r.Resources = append(r.Resources, res(typeURL, name))
		}
	}
	b, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// Appended by hand: proto.Marshal refuses invalid UTF-8, which a
	// server may well send.
	unreadable := false
	for _, e := range entries {
		b = appendResourceError(b, e)
		unreadable = unreadable || !utf8.ValidString(e.name) && e.hasName || !utf8.ValidString(e.msg) && e.hasDetail
	}

	// What the engine must make of the entries.
	var wantNACK []string
	wantCode := map[string]codes.Code{} // by cache key, for watched names
	seen := map[string]bool{}
	if withResources {
		for _, name := range fuzzCached(typeURL) {
			seen[name] = true
		}
	}
	if unreadable {
		wantNACK = append(wantNACK, "does not parse")
	} else {
		for i, e := range entries {
			code := codes.OK
			if e.hasDetail {
				code = codes.Code(int32(e.code)) // as the engine reads the int32 field
			}
			name := ""
			if e.hasName {
				name = e.name
			}
			if name == "" || code == codes.OK || code > codes.Unauthenticated {
				wantNACK = append(wantNACK, fmt.Sprintf("resource_errors index %d", i))
				continue
			}
			key, ok := fuzzCacheKey(typeURL, name)
			if !ok || seen[key] {
				wantNACK = append(wantNACK, fmt.Sprintf("resource_errors index %d", i))
				continue
			}
			seen[key] = true
			if _, watched := env.watchers[watchKey{typeURL, key}]; watched {
				wantCode[key] = code
			}
		}
	}

	if err := env.st.SendRaw(b); err != nil {
		t.Fatalf("sending the input: %v (the stream ended before it)", err)
	}
	answer := env.awaitAnswers(t, map[string]string{typeURL: nonce})[typeURL]
	detail := answer.GetErrorDetail()
	switch {
	case wantNACK == nil && detail != nil:
		t.Errorf("got NACK %.300q, want ACK", detail.GetMessage())
	case wantNACK != nil && detail == nil:
		t.Errorf("got ACK, want NACK containing %q", wantNACK)
	}
	for _, w := range wantNACK {
		if detail != nil && !strings.Contains(detail.GetMessage(), w) {
			t.Errorf("NACK %.600q does not contain %q", detail.GetMessage(), w)
		}
	}
	// gRPC's rule: ACK or NACK, a response with a valid resource sets the
	// version; a NACK of one without repeats the last accepted version.
	wantVersion := nonce
	if unreadable || wantNACK != nil && !withResources {
		wantVersion = env.lastVersion[typeURL]
	}
	if answer.GetVersionInfo() != wantVersion {
		t.Errorf("answer's version = %q, want %q", answer.GetVersionInfo(), wantVersion)
	}

	events := env.probe(t)
	states := env.states()
	env.checkLogs(t)
	if unreadable {
		for _, name := range fuzzCached(typeURL) {
			if s := states[watchKey{typeURL, name}]; !s.cached {
				t.Errorf("%q was dropped (now %v) by a response that does not parse", name, s.status)
			}
		}
	}
	for key, code := range wantCode {
		k := watchKey{typeURL, key}
		heard := false
		for _, ev := range events[k] {
			heard = heard || status.Code(ev.Err) == code && engine.KindOf(ev.Err) == engine.KindServerReported
		}
		if !heard {
			t.Errorf("%q: watcher got %v, want the server's error with code %v", key, events[k], code)
		}
		if key == fuzzSentinel {
			continue // the probe has changed it since
		}
		s := states[k]
		wantCached := key != fuzzUncached && code != codes.NotFound && code != codes.PermissionDenied
		if s.status != adminpb.ClientResourceStatus_RECEIVED_ERROR || s.cached != wantCached {
			t.Errorf("%q is %v, cached %v; want RECEIVED_ERROR, cached %v", key, s.status, s.cached, wantCached)
		}
	}
	if t.Failed() {
		return
	}
	env.reset(t)
}

// fuzzCacheKey is the key under which the engine would file name, or
// false if it would refuse the name: invalid UTF-8, an unparsable xdstp
// name, one of another type or of an authority not in fuzzEnv's bootstrap.
func fuzzCacheKey(typeURL, name string) (string, bool) {
	if !utf8.ValidString(name) {
		return "", false
	}
	if !strings.HasPrefix(name, "xdstp:") {
		return name, true
	}
	n, err := xdsname.Parse(name)
	if err != nil || xdsname.CheckType(n, typeURL) != nil || n.Authority != fuzzAuthority {
		return "", false
	}
	return n.String(), true
}

// appendResourceError appends e as a DiscoveryResponse.resource_errors
// (field 7) entry, encoded as proto.Marshal would but without checking
// UTF-8.
func appendResourceError(b []byte, e tp3Entry) []byte {
	var entry []byte
	if e.hasName {
		var rn []byte
		if e.name != "" {
			rn = protowire.AppendTag(rn, 1, protowire.BytesType) // ResourceName.name
			rn = protowire.AppendString(rn, e.name)
		}
		entry = protowire.AppendTag(entry, 1, protowire.BytesType) // resource_name
		entry = protowire.AppendBytes(entry, rn)
	}
	if e.hasDetail {
		var st []byte
		if e.code != 0 {
			st = protowire.AppendTag(st, 1, protowire.VarintType) // Status.code, an int32
			st = protowire.AppendVarint(st, uint64(int64(int32(e.code))))
		}
		if e.msg != "" {
			st = protowire.AppendTag(st, 2, protowire.BytesType) // Status.message
			st = protowire.AppendString(st, e.msg)
		}
		entry = protowire.AppendTag(entry, 2, protowire.BytesType) // error_detail
		entry = protowire.AppendBytes(entry, st)
	}
	b = protowire.AppendTag(b, 7, protowire.BytesType)
	return protowire.AppendBytes(b, entry)
}
