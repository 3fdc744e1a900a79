package engine

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"unicode/utf8"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

const resourceWrapperTypeURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// Bounds on a NACK's error_detail: a response of 100,000 invalid resources,
// or one with megabyte names, must not produce a request the server
// refuses to read.
const (
	maxListedFailures = 100
	maxFailureBytes   = 1024
	maxNameBytes      = 256
)

// responseTally collects what one response did: the NACK's failures, the
// metric counts, and the names it carried.
type responseTally struct {
	failures []string
	omitted  int // failures beyond maxListedFailures
	valid    int
	invalid  int // failures and TP3 errors (A78 counts both)
	// named holds the cache key of every resource and TP3 error of the
	// response, to find duplicates and, for LDS and CDS, deletions.
	named map[string]bool
	// nameless: a resource's name could not be learned. It could be any
	// resource, so nothing is deleted by its absence.
	nameless bool
}

func (t *responseTally) fail(format string, args ...any) {
	t.invalid++
	if len(t.failures) >= maxListedFailures {
		t.omitted++
		return
	}
	t.failures = append(t.failures, truncateUTF8(fmt.Sprintf(format, args...), maxFailureBytes))
}

// nackDetail is the error_detail of the NACK, or nil for an ACK.
func (t *responseTally) nackDetail() *rpcstatus.Status {
	if len(t.failures) == 0 {
		return nil
	}
	msg := "xDS response validation errors: [" + strings.Join(t.failures, "; ")
	if t.omitted > 0 {
		msg += fmt.Sprintf("; and %d more", t.omitted)
	}
	msg += "]"
	// error_detail.message is a proto string: it must be valid UTF-8 or
	// the request cannot be marshalled at all.
	return &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: strings.ToValidUTF8(msg, "\uFFFD")}
}

// quoteName quotes a resource name for a NACK or a log: escaped, so that
// invalid UTF-8 stays printable, and shortened when huge.
func quoteName(name string) string {
	if len(name) <= maxNameBytes {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q… (%d bytes)", truncateUTF8(name, maxNameBytes), len(name))
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// decodedResource is what the decode stage learned of one resource of a
// response.
type decodedResource struct {
	wrapper string // the Resource wrapper's name, or ""
	name    string // as sent; "" when it could not be learned
	key     string // the cache key of name, when name resolves
	value   registry.Resource
	raw     []byte
	err     error  // why the resource is invalid
	nerr    *Error // why name does not resolve
}

// decodeResponse is the first stage of a response: it unwraps, checks
// and decodes every resource, with no engine lock held, so that a large
// response stalls neither Watch calls nor other servers' streams.
// Resources whose bytes equal those cached from this server are not
// decoded again; the cache is consulted in one short critical section.
func (c *channel) decodeResponse(typ registry.ResourceType, resp *discoverypb.DiscoveryResponse) []decodedResource {
	e := c.e
	out := make([]decodedResource, len(resp.GetResources()))
	for i, res := range resp.GetResources() {
		d := &out[i]
		d.wrapper, d.raw, d.err = unwrapResource(typ, res)
		d.name = d.wrapper
	}
	cached := c.cachedValues(typ.TypeURL, out)
	for i := range out {
		d := &out[i]
		if d.err != nil {
			continue
		}
		if en := cached[i]; en.value != nil {
			d.name, d.value = en.name, en.value
		} else {
			d.name, d.value, d.err = c.decodeResource(typ, d.wrapper, d.raw)
		}
		if d.name != "" {
			_, d.key, d.nerr = e.resolveName(typ.TypeURL, d.name)
		}
	}
	return out
}

// unwrapResource takes a resource out of its envelope.Resource wrapper,
// if any, and checks its type. It returns the wrapper's name (or "") and
// the resource's bytes.
func unwrapResource(typ registry.ResourceType, res *anypb.Any) (wrapperName string, raw []byte, err error) {
	inner := res
	if res.GetTypeUrl() == resourceWrapperTypeURL {
		w := &discoverypb.Resource{}
		if err := proto.Unmarshal(res.GetValue(), w); err != nil {
			return "", nil, fmt.Errorf("envoy.service.discovery.v3.Resource wrapper does not parse: %w", err)
		}
		wrapperName = w.GetName()
		if wrapperName == "" {
			wrapperName = w.GetResourceName().GetName()
		}
		inner = w.GetResource()
		if inner == nil {
			return wrapperName, nil, errors.New("envoy.service.discovery.v3.Resource wrapper holds no resource")
		}
	}
	if inner.GetTypeUrl() != typ.TypeURL {
		return wrapperName, nil, fmt.Errorf("resource type %s in a response of type %q", quoteName(inner.GetTypeUrl()), typ.TypeURL)
	}
	return wrapperName, inner.GetValue(), nil
}

// cachedHit is a cached resource whose bytes a response repeats.
type cachedHit struct {
	name  string
	value registry.Resource
}

// cachedValues finds, for each resource of a response, the resource
// cached from this server with exactly its bytes and wrapper name: by the
// wrapper's name, or else by the bytes' hash. Decoding them again would
// give the same value: the decoder is deterministic, it sees the same
// bytes and wrapper name, and the validator saw the same server.
func (c *channel) cachedValues(typeURL string, res []decodedResource) []cachedHit {
	e := c.e
	hashes := make([]uint64, len(res))
	for i := range res {
		if res[i].err == nil && res[i].wrapper == "" {
			hashes[i] = maphash.Bytes(e.hashSeed, res[i].raw)
		}
	}
	hits := make([]cachedHit, len(res))
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range res {
		if res[i].err != nil {
			continue
		}
		var en *entry
		if w := res[i].wrapper; w != "" {
			_, en = e.lookupEntryLocked(typeURL, w)
		} else {
			en = e.byContent[contentKey{typeURL, hashes[i]}]
		}
		if en != nil && en.value != nil && en.source == c && en.wrapper == res[i].wrapper && bytes.Equal(en.raw, res[i].raw) {
			hits[i] = cachedHit{name: en.name, value: en.value}
		}
	}
	return hits
}

// decodeResource decodes and validates one resource. The name is
// returned whenever it is known, also with an error.
func (c *channel) decodeResource(typ registry.ResourceType, wrapperName string, raw []byte) (string, registry.Resource, error) {
	dr, err := typ.Decode(raw, registry.DecodeOptions{WrapperName: wrapperName, Server: c.serverInfo, Switches: c.e.switches})
	if err == nil && wrapperName != "" && dr.Name != wrapperName && !c.e.sameResourceName(typ.TypeURL, dr.Name, wrapperName) {
		// Which of the two names is meant cannot be known; the wrapper's
		// is the one the protocol defines, so the NACK is charged to it.
		return wrapperName, nil, fmt.Errorf("resource name %s does not match its Resource wrapper's name %s", quoteName(dr.Name), quoteName(wrapperName))
	}
	return dr.Name, dr.Resource, err
}

// sameResourceName reports whether two names are one resource: equal, or
// xdstp:// names with one canonical form (A47).
func (e *Engine) sameResourceName(typeURL, a, b string) bool {
	_, ka, errA := e.resolveName(typeURL, a)
	_, kb, errB := e.resolveName(typeURL, b)
	return errA == nil && errB == nil && ka == kb
}

// applyResponseLocked is the second stage of a response, in one critical
// section: the decoded resources update the cache (valid ones) or are
// NACKed together (invalid ones); TP3 errors and LDS/CDS deletions are
// applied; then the type is ACKed or NACKed. Watcher notifications are
// scheduled holding the gate; they run, as the third stage, outside the
// lock.
func (c *channel) applyResponseLocked(s *adsStream, typ registry.ResourceType, resp *discoverypb.DiscoveryResponse, decoded []decodedResource, gate *readGate) {
	e := c.e
	c.onResponseLocked(s)
	typeURL := typ.TypeURL
	st := s.typeLocked(typeURL)
	st.nonce = resp.GetNonce()
	version := resp.GetVersionInfo()

	t := responseTally{named: make(map[string]bool, len(decoded)+len(resp.GetResourceErrors()))}
	for i := range decoded {
		c.applyResourceLocked(s, typ, i, &decoded[i], version, &t, gate)
	}
	if !e.switches.DisableDataErrorHandling {
		for i, re := range resp.GetResourceErrors() {
			c.applyResourceErrorLocked(s, typeURL, i, re, version, &t, gate)
		}
	}
	if typ.AllResourcesRequiredInSotW && !t.nameless {
		c.applyDeletionsLocked(typeURL, t.named, version, gate)
	}

	// A response is accepted when it had at least one valid resource or
	// no error at all; a NACK of an all-invalid response repeats the last
	// accepted version (gRPC's rule).
	if t.valid > 0 || len(t.failures) == 0 {
		c.versions[typeURL] = version
	}
	if st.nack = t.nackDetail(); st.nack != nil {
		e.log.Warn("xDS response NACKed", "server", c.server.URI, "type", typ.ShortName(), "version", version, "errors", st.nack.GetMessage())
	}
	e.metrics.resourceUpdates(c, typ, t.valid, t.invalid)
	s.markDirtyLocked(typeURL)
}

// applyResourceLocked applies resource i of a response.
func (c *channel) applyResourceLocked(s *adsStream, typ registry.ResourceType, i int, d *decodedResource, version string, t *responseTally, gate *readGate) {
	e := c.e
	if d.name == "" {
		t.nameless = true
		t.fail("resource index %d: %v", i, d.err)
		return
	}
	if d.nerr != nil {
		// Not a name anyone can watch, so not one of the cached ones.
		t.fail("resource index %d, name %s: %v", i, quoteName(d.name), d.nerr.Err)
		return
	}
	if t.named[d.key] {
		// The first one counts; a second could only contradict it.
		t.fail("resource index %d, name %s: duplicate resource name %s", i, quoteName(d.name), quoteName(d.name))
		return
	}
	t.named[d.key] = true
	s.settleLocked(typ.TypeURL, d.key)
	_, en := e.lookupEntryLocked(typ.TypeURL, d.key)
	if d.err != nil {
		t.fail("resource index %d, name %s: %v", i, quoteName(d.name), d.err)
		if en != nil {
			nack := e.newError(KindNACK, codes.InvalidArgument, en, c, fmt.Errorf("invalid resource: %w", d.err))
			e.onDataErrorLocked(en, nack, features.ReasonNACK, version, c, gate)
		}
		return
	}
	t.valid++
	if en != nil {
		e.onValidLocked(en, d.value, d.raw, d.wrapper, version, c, gate)
	}
}

// applyResourceErrorLocked applies entry i of an xRFC TP3 resource_errors
// list: the timer stops and the entry moves to RECEIVED_ERROR. NOT_FOUND
// and PERMISSION_DENIED are data errors, subject to the server's error
// policy; other codes are transient and never drop the cache (A88). An
// entry that is not an error (no name, code OK) is NACKed, as gRPC C-core
// does: a watcher never sees an error whose code is OK.
func (c *channel) applyResourceErrorLocked(s *adsStream, typeURL string, i int, re *discoverypb.ResourceError, version string, t *responseTally, gate *readGate) {
	e := c.e
	name := re.GetResourceName().GetName()
	code := codes.Code(re.GetErrorDetail().GetCode())
	switch {
	case name == "":
		// An error for a resource that is not named could be for any:
		// as for a nameless resource, nothing is deleted by absence.
		t.nameless = true
		t.fail("resource_errors index %d: resource_name unset", i)
		return
	case code == codes.OK:
		t.fail("resource_errors index %d, name %s: error_detail must be non-OK", i, quoteName(name))
		return
	case code > codes.Unauthenticated:
		t.fail("resource_errors index %d, name %s: error_detail code %d is not a gRPC status code", i, quoteName(name), uint32(code))
		return
	}
	_, key, nerr := e.resolveName(typeURL, name)
	if nerr != nil {
		t.fail("resource_errors index %d, name %s: cannot parse xDS resource name: %v", i, quoteName(name), nerr.Err)
		return
	}
	if t.named[key] {
		t.fail("resource_errors index %d, name %s: duplicate resource name %s", i, quoteName(name), quoteName(name))
		return
	}
	t.named[key] = true
	t.invalid++
	s.settleLocked(typeURL, key)
	_, en := e.lookupEntryLocked(typeURL, key)
	if en == nil {
		return
	}
	msg := strings.ToValidUTF8(re.GetErrorDetail().GetMessage(), "\uFFFD")
	err := e.newError(KindServerReported, code, en, c, fmt.Errorf("xDS server reported %s: %s", code, msg))
	e.onDataErrorLocked(en, err, features.ReasonServerReported, version, c, gate)
}

// applyDeletionsLocked handles SotW deletion for all-resources-required
// types (LDS, CDS): a cached resource missing from a response of the
// authority's active server has been deleted. The caller makes sure every
// resource of the response was named.
func (c *channel) applyDeletionsLocked(typeURL string, named map[string]bool, version string, gate *readGate) {
	e := c.e
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		for key, en := range a.resources[typeURL] {
			if named[key] || en.value == nil || en.state == StateDoesNotExist {
				continue
			}
			err := e.newError(KindDeleted, codes.NotFound, en, c, errors.New("resource deleted by the xDS server"))
			e.onDataErrorLocked(en, err, features.ReasonDeletion, version, c, gate)
		}
	}
}

// handleUnreadableLocked answers a response whose envelope does not parse.
// If its type and nonce can still be read, the response is NACKed and the
// watchers of that type learn why their server's updates are not arriving;
// nothing is dropped or deleted, since what the response held is unknown.
func (c *channel) handleUnreadableLocked(s *adsStream, b []byte, perr error, gate *readGate) {
	e := c.e
	c.onResponseLocked(s)
	typeURL, nonce, ok := peekTypeAndNonce(b)
	e.metrics.unreadableResponse(c, typeURL)
	typ, known := e.lookupType(typeURL)
	if !ok || !known {
		e.log.Warn("xDS response does not parse and names no known type; ignored", "server", c.server.URI, "type", typeURL, "bytes", len(b), "error", perr)
		return
	}
	st := s.typeLocked(typeURL)
	st.nonce = nonce
	cause := fmt.Errorf("xDS response of %d bytes does not parse: %w", len(b), perr)
	st.nack = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: strings.ToValidUTF8(cause.Error(), "\uFFFD")}
	e.log.Warn("xDS response NACKed", "server", c.server.URI, "type", typ.ShortName(), "errors", st.nack.GetMessage())
	e.metrics.resourceUpdates(c, typ, 0, 1)
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		for key, en := range a.resources[typeURL] {
			if en.orphaned {
				continue
			}
			s.settleLocked(typeURL, key)
			err := e.newError(KindNACK, codes.InvalidArgument, en, c, cause)
			e.onUnattributedNACKLocked(en, err, gate)
		}
	}
	s.markDirtyLocked(typeURL)
}

// peekTypeAndNonce reads type_url (field 4) and nonce (field 5) from the
// top level of a DiscoveryResponse that proto.Unmarshal refused, skipping
// whatever else it can. It reports whether both fields were read.
func peekTypeAndNonce(b []byte) (typeURL, nonce string, ok bool) {
	var haveType, haveNonce bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 4 || num == 5) {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				break
			}
			if num == 4 {
				typeURL, haveType = string(v), true
			} else {
				nonce, haveNonce = string(v), true
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			break
		}
		b = b[m:]
	}
	// Echoed in a proto string, the nonce must be valid UTF-8.
	return typeURL, strings.ToValidUTF8(nonce, "\uFFFD"), haveType && haveNonce
}
