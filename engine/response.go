package engine

import (
	"errors"
	"fmt"
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

// handleResponseLocked applies one DiscoveryResponse: every resource is
// unwrapped, decoded (unless its bytes are already cached) and validated;
// valid ones update the cache, invalid ones are NACKed together; TP3
// errors and LDS/CDS deletions are applied; then the type is ACKed or
// NACKed. Watcher notifications hold the gate.
func (c *channel) handleResponseLocked(s *adsStream, resp *discoverypb.DiscoveryResponse, gate *readGate) {
	e := c.e
	c.onResponseLocked(s)
	typeURL := resp.GetTypeUrl()
	typ, ok := e.lookupType(typeURL)
	if !ok {
		e.log.Warn("xDS response for an unregistered type; ignored", "server", c.server.URI, "type", typeURL)
		return
	}
	st := s.typeLocked(typeURL)
	st.nonce = resp.GetNonce()
	version := resp.GetVersionInfo()

	t := responseTally{named: make(map[string]bool, len(resp.GetResources())+len(resp.GetResourceErrors()))}
	for i, res := range resp.GetResources() {
		c.applyResourceLocked(s, typ, i, res, version, &t, gate)
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
func (c *channel) applyResourceLocked(s *adsStream, typ registry.ResourceType, i int, res *anypb.Any, version string, t *responseTally, gate *readGate) {
	e := c.e
	name, value, raw, err := c.decodeResourceLocked(typ, res)
	if name == "" {
		t.nameless = true
		t.fail("resource index %d: %v", i, err)
		return
	}
	_, key, nerr := e.resolveNameLocked(typ.TypeURL, name)
	if nerr != nil {
		// Not a name anyone can watch, so not one of the cached ones.
		t.fail("resource index %d, name %s: %v", i, quoteName(name), nerr.Err)
		return
	}
	if t.named[key] {
		// The first one counts; a second could only contradict it.
		t.fail("resource index %d, name %s: duplicate resource name %s", i, quoteName(name), quoteName(name))
		return
	}
	t.named[key] = true
	s.settleLocked(typ.TypeURL, key)
	_, en := e.lookupEntryLocked(typ.TypeURL, key)
	if err != nil {
		t.fail("resource index %d, name %s: %v", i, quoteName(name), err)
		if en != nil {
			nack := e.newError(KindNACK, codes.InvalidArgument, en, c, fmt.Errorf("invalid resource: %w", err))
			e.onDataErrorLocked(en, nack, features.ReasonNACK, version, c, gate)
		}
		return
	}
	t.valid++
	if en != nil {
		e.onValidLocked(en, value, raw, version, c, gate)
	}
}

// decodeResourceLocked unwraps one resource and decodes it, or finds its
// bytes already cached. The name is returned whenever it is known, also
// with an error.
func (c *channel) decodeResourceLocked(typ registry.ResourceType, res *anypb.Any) (name string, value registry.Resource, raw []byte, err error) {
	inner := res
	wrapperName := ""
	if res.GetTypeUrl() == resourceWrapperTypeURL {
		w := &discoverypb.Resource{}
		if err := proto.Unmarshal(res.GetValue(), w); err != nil {
			return "", nil, nil, fmt.Errorf("envoy.service.discovery.v3.Resource wrapper does not parse: %w", err)
		}
		wrapperName = w.GetName()
		if wrapperName == "" {
			wrapperName = w.GetResourceName().GetName()
		}
		inner = w.GetResource()
		if inner == nil {
			return wrapperName, nil, nil, errors.New("envoy.service.discovery.v3.Resource wrapper holds no resource")
		}
	}
	if inner.GetTypeUrl() != typ.TypeURL {
		return wrapperName, nil, nil, fmt.Errorf("resource type %s in a response of type %q", quoteName(inner.GetTypeUrl()), typ.TypeURL)
	}
	raw = inner.GetValue()
	if en := c.e.cachedByContent(typ.TypeURL, wrapperName, raw, c); en != nil {
		return en.name, en.value, en.raw, nil
	}
	dr, err := typ.Decode(raw, registry.DecodeOptions{WrapperName: wrapperName, Server: c.serverInfo, Switches: c.e.switches})
	if err == nil && wrapperName != "" && dr.Name != wrapperName && !c.e.sameResourceName(typ.TypeURL, dr.Name, wrapperName) {
		// Which of the two names is meant cannot be known; the wrapper's
		// is the one the protocol defines, so the NACK is charged to it.
		return wrapperName, nil, nil, fmt.Errorf("resource name %s does not match its Resource wrapper's name %s", quoteName(dr.Name), quoteName(wrapperName))
	}
	return dr.Name, dr.Resource, raw, err
}

// sameResourceName reports whether two names are one resource: equal, or
// xdstp:// names with one canonical form (A47).
func (e *Engine) sameResourceName(typeURL, a, b string) bool {
	_, ka, errA := e.resolveNameLocked(typeURL, a)
	_, kb, errB := e.resolveNameLocked(typeURL, b)
	return errA == nil && errB == nil && ka == kb
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
		t.fail("resource_errors index %d: resource_name unset", i)
		return
	case code == codes.OK:
		t.fail("resource_errors index %d, name %s: error_detail must be non-OK", i, quoteName(name))
		return
	case code > codes.Unauthenticated:
		t.fail("resource_errors index %d, name %s: error_detail code %d is not a gRPC status code", i, quoteName(name), uint32(code))
		return
	}
	_, key, nerr := e.resolveNameLocked(typeURL, name)
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
