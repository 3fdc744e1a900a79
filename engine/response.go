package engine

import (
	"errors"
	"fmt"
	"strings"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

const resourceWrapperTypeURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// handleResponseLocked applies one DiscoveryResponse: every resource is
// unwrapped, decoded (unless its bytes are already cached) and validated;
// valid ones update the cache, invalid ones are NACKed together; TP3
// errors and LDS/CDS deletions are applied; then the type is ACKed or
// NACKed. Watcher notifications hold the gate.
func (c *channel) handleResponseLocked(s *adsStream, resp *discoverypb.DiscoveryResponse, gate *readGate) {
	e := c.e
	s.seenResponse = true
	c.retries = 0
	c.onHealthyLocked()
	typeURL := resp.GetTypeUrl()
	typ, ok := e.lookupType(typeURL)
	if !ok {
		e.log.Warn("xDS response for an unregistered type; ignored", "server", c.server.URI, "type", typeURL)
		return
	}
	st := s.typeLocked(typeURL)
	st.nonce = resp.GetNonce()
	version := resp.GetVersionInfo()

	var failures []string
	valid, invalid := 0, 0
	var seen map[string]bool // for SotW deletion of all-resources-required types
	if typ.AllResourcesRequiredInSotW {
		seen = make(map[string]bool, len(resp.GetResources()))
	}
	for i, res := range resp.GetResources() {
		name, value, raw, err := c.decodeResourceLocked(typ, res)
		if name == "" {
			invalid++
			failures = append(failures, fmt.Sprintf("resource index %d: %v", i, err))
			continue
		}
		_, key, nerr := e.resolveNameLocked(typeURL, name)
		if nerr != nil {
			invalid++
			failures = append(failures, fmt.Sprintf("resource index %d, name %q: %v", i, name, nerr.Err))
			continue
		}
		s.settleLocked(typeURL, key)
		if seen != nil {
			seen[key] = true
		}
		_, en := e.lookupEntryLocked(typeURL, key)
		if err != nil {
			invalid++
			failures = append(failures, fmt.Sprintf("resource index %d, name %q: %v", i, name, err))
			if en != nil {
				nack := e.newError(KindNACK, codes.InvalidArgument, en, c, fmt.Errorf("invalid resource: %w", err))
				e.onDataErrorLocked(en, nack, features.ReasonNACK, version, c, gate)
			}
			continue
		}
		valid++
		if en != nil {
			e.onValidLocked(en, value, raw, version, c, gate)
		}
	}

	if !e.switches.DisableDataErrorHandling {
		for _, re := range resp.GetResourceErrors() {
			invalid++
			c.handleResourceErrorLocked(s, typeURL, re, version, seen, gate)
		}
	}

	if seen != nil {
		c.applyDeletionsLocked(typeURL, seen, version, gate)
	}

	// A response is accepted when it had at least one valid resource or
	// no error at all; a NACK of an all-invalid response repeats the last
	// accepted version (gRPC's rule).
	if valid > 0 || len(failures) == 0 {
		c.versions[typeURL] = version
	}
	if len(failures) > 0 {
		msg := "xDS response validation errors: [" + strings.Join(failures, "; ") + "]"
		st.nack = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: msg}
		e.log.Warn("xDS response NACKed", "server", c.server.URI, "type", typ.ShortName(), "version", version, "errors", msg)
	}
	e.metrics.resourceUpdates(c, typ, valid, invalid)
	s.markDirtyLocked(typeURL)
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
		return wrapperName, nil, nil, fmt.Errorf("resource type %q in a response of type %q", inner.GetTypeUrl(), typ.TypeURL)
	}
	raw = inner.GetValue()
	if en := c.e.cachedByContent(typ.TypeURL, wrapperName, raw, c); en != nil {
		return en.name, en.value, en.raw, nil
	}
	dr, err := typ.Decode(raw, registry.DecodeOptions{WrapperName: wrapperName, Server: c.serverInfo, Switches: c.e.switches})
	return dr.Name, dr.Resource, raw, err
}

// handleResourceErrorLocked applies one xRFC TP3 resource error: the
// timer stops and the entry moves to RECEIVED_ERROR. NOT_FOUND and
// PERMISSION_DENIED are data errors, subject to the server's error
// policy; other codes are transient and never drop the cache (A88).
func (c *channel) handleResourceErrorLocked(s *adsStream, typeURL string, re *discoverypb.ResourceError, version string, seen map[string]bool, gate *readGate) {
	e := c.e
	name := re.GetResourceName().GetName()
	_, key, nerr := e.resolveNameLocked(typeURL, name)
	if nerr != nil {
		e.log.Warn("xDS resource error for an unparsable name; ignored", "server", c.server.URI, "name", name)
		return
	}
	s.settleLocked(typeURL, key)
	if seen != nil {
		seen[key] = true
	}
	_, en := e.lookupEntryLocked(typeURL, key)
	if en == nil {
		return
	}
	code := codes.Code(re.GetErrorDetail().GetCode())
	msg := re.GetErrorDetail().GetMessage()
	err := e.newError(KindServerReported, code, en, c, fmt.Errorf("xDS server reported %s: %s", code, msg))
	e.onDataErrorLocked(en, err, features.ReasonServerReported, version, c, gate)
}

// applyDeletionsLocked handles SotW deletion for all-resources-required
// types (LDS, CDS): a cached resource missing from a response of the
// authority's active server has been deleted.
func (c *channel) applyDeletionsLocked(typeURL string, seen map[string]bool, version string, gate *readGate) {
	e := c.e
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		for key, en := range a.resources[typeURL] {
			if seen[key] || en.value == nil || en.state == StateDoesNotExist {
				continue
			}
			err := e.newError(KindDeleted, codes.NotFound, en, c, errors.New("resource deleted by the xDS server"))
			e.onDataErrorLocked(en, err, features.ReasonDeletion, version, c, gate)
		}
	}
}
