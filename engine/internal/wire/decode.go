package wire

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

const resourceWrapperTypeURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// candidate is what stage 1 learns of one resource of a response: a
// Resource, whose Key is set once its name is checked. The response's
// Resources are its candidates, compacted in place.
type candidate = Resource

// decode is the first stage of a response: it unwraps, checks and decodes
// every resource and TP3 entry, with no lock held, so that a large
// response stalls neither Watch calls nor other servers' streams.
// Resources whose bytes equal those cached from this server are not
// decoded again; the cache is consulted in critical sections of ApplyPart
// resources.
// It returns what the host applies and the failures the NACK lists.
func (s *stream) decode(typ registry.ResourceType, env envelope) (*Response, *tally) {
	cands := s.scratch.candidates(len(env.resources))
	last := s.lastResponse(typ.TypeURL)
	prev := last.byIndex
	// A bare resource of the response's type, nearly every one, is taken
	// as it is, without a call. Resources of one type URL share its slice
	// (rawAny), so the type URL is compared with typ's once per slice, not
	// once per resource.
	bare := typ.TypeURL != resourceWrapperTypeURL
	var checked []byte // the last type URL compared with typ's
	isType := false    // whether it was typ's
	for i := range env.resources {
		if i%yieldEvery == yieldEvery-1 {
			s.yieldIfLong()
		}
		c := &cands[i]
		res := &env.resources[i]
		if !sameSlice(res.typeURL, checked) {
			checked, isType = res.typeURL, string(res.typeURL) == typ.TypeURL
		}
		if bare && isType {
			c.Raw = res.value
		} else {
			c.Wrapper, c.Raw, c.Err = unwrapResource(typ.TypeURL, res)
		}
		c.name, c.index = c.Wrapper, int32(i)
		// A SotW server re-sends every unchanged resource, in the same
		// order as a rule: the same bytes at the same index are the
		// resource held since the last response, if the host confirms.
		if i < len(prev) && prev[i].held != nil && c.Err == nil && c.Wrapper == "" {
			c.Held = prev[i].held
			if bytes.Equal(prev[i].raw, c.Raw) {
				c.Raw, c.repeated = prev[i].raw, true
			}
		}
	}
	r, t := s.decodeCandidates(typ, cands, env.errors, 0, last)
	r.Version = env.version
	return r, t
}

// decodeCandidates decodes a response's resources, SotW or delta, and
// checks them and its TP3 entries. extra sizes the Named map for names
// the caller adds. last is the type's last response for a SotW one, nil
// for a delta one: a SotW response that is large is decoded while the
// apply stage checks and applies its resources (startPipeline), and is
// returned with them pending.
func (s *stream) decodeCandidates(typ registry.ResourceType, cands []candidate, errs []*discoverypb.ResourceError, extra int, last *lastResponse) (*Response, *tally) {
	s.reuseCached(typ.TypeURL, cands)
	todo := decodable(cands)

	r := &Response{Type: typ, Complete: true, namedSize: len(cands) + len(errs) + extra}
	t := &tally{}
	r.Resources = cands[:0]
	if last != nil && last.keys != nil {
		// Named is filled only if a key differs from the last response's.
		r.sameKeys = last
	} else {
		r.Named = s.scratch.namedMap(r.namedSize)
	}
	if last != nil && pipelined(todo) {
		s.startPipeline(typ, r, t, cands, errs, todo)
		return r, t
	}
	s.decodeAll(typ, cands, todo)
	for i := range cands {
		s.checkResource(r, t, i, &cands[i])
	}
	s.checkErrors(r, t, errs)
	return r, t
}

// checkErrors checks a response's TP3 entries, once its resources are
// checked, and completes its counts.
func (s *stream) checkErrors(r *Response, t *tally, errs []*discoverypb.ResourceError) {
	s.endKeys(r, len(errs))
	if !s.cfg.Switches.DisableDataErrorHandling {
		for i, re := range errs {
			s.checkResourceError(r, t, i, re)
		}
	}
	r.Invalid = t.invalid
	r.Accepted = r.Valid > 0 || len(t.failures) == 0
}

// Parallel decoding: a response with at least parallelMin resources to
// decode is split across GOMAXPROCS workers, each taking parallelChunk
// resources at a time. Below that, starting goroutines costs more than it
// saves.
const (
	parallelMin   = 128
	parallelChunk = 32
)

// decodeOne decodes and validates one candidate.
func (s *stream) decodeOne(typ registry.ResourceType, c *candidate) {
	// The bytes alias the whole response; a decoder, and the cache, may
	// keep them, and must not keep the response alive with them.
	c.Raw = bytes.Clone(c.Raw)
	c.name, c.Value, c.Err = s.decodeResource(typ, c.Wrapper, c.Raw)
}

// decodeAll decodes and validates the candidates of todo, those the cache
// did not answer. Resources are independent and decoders are safe for
// concurrent use (a registry rule), so a large response is decoded in
// parallel by a bounded set of workers; the order of the results does not
// change.
func (s *stream) decodeAll(typ registry.ResourceType, cands []candidate, todo []int) {
	workers := min(runtime.GOMAXPROCS(0), len(todo)/parallelChunk)
	if len(todo) < parallelMin || workers < 2 {
		for _, i := range todo {
			s.decodeOne(typ, &cands[i])
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			yields := startYieldClock()
			for {
				end := int(next.Add(parallelChunk))
				start := end - parallelChunk
				if start >= len(todo) {
					return
				}
				for _, i := range todo[start:min(end, len(todo))] {
					s.decodeOne(typ, &cands[i])
				}
				// The workers fill every P: between chunks, let a
				// runnable Watch call (or anything else) have one, rather
				// than wait for the scheduler's 10 ms preemption.
				yields.yieldIfLong()
			}
		}()
	}
	wg.Wait()
}

// unwrapResource takes a resource out of its envelope.Resource wrapper,
// if any, and checks its type. It returns the wrapper's name (or "") and
// the resource's bytes.
func unwrapResource(typeURL string, res *rawAny) (wrapperName string, raw []byte, err error) {
	innerType, value := res.typeURL, res.value
	if string(innerType) == resourceWrapperTypeURL {
		w := &discoverypb.Resource{}
		if err := proto.Unmarshal(value, w); err != nil {
			return "", nil, fmt.Errorf("envoy.service.discovery.v3.Resource wrapper does not parse: %w", err)
		}
		wrapperName = w.GetName()
		if wrapperName == "" {
			wrapperName = w.GetResourceName().GetName()
		}
		if w.GetResource() == nil {
			return wrapperName, nil, errors.New("envoy.service.discovery.v3.Resource wrapper holds no resource")
		}
		innerType, value = []byte(w.GetResource().GetTypeUrl()), w.GetResource().GetValue()
	}
	if string(innerType) != typeURL {
		return wrapperName, nil, fmt.Errorf("resource type %s in a response of type %q", QuoteName(string(innerType)), typeURL)
	}
	return wrapperName, value, nil
}

// reuseCached fills in, for each resource of a response, the value cached
// from this server with exactly its bytes and wrapper name. Decoding them
// again would give the same value: the decoder is deterministic, it sees
// the same bytes and wrapper name, and the validator saw the same server.
func (s *stream) reuseCached(typeURL string, cands []candidate) {
	for i := range cands {
		if i%yieldEvery == yieldEvery-1 {
			s.yieldIfLong()
		}
		if c := &cands[i]; c.Err == nil && c.Wrapper == "" && !c.repeated {
			c.Hash = maphash.Bytes(s.cfg.HashSeed, c.Raw)
		}
	}
	// In parts, as responses are applied, so that Watch calls do not
	// wait for the whole response.
	for rest := cands; len(rest) > 0; {
		part := rest[:min(len(rest), ApplyPart)]
		rest = rest[len(part):]
		s.cfg.Lock.Lock()
		if s.ended {
			s.cfg.Lock.Unlock()
			return // what is decoded now is dropped unread
		}
		for i := range part {
			c := &part[i]
			if c.Err != nil {
				continue
			}
			if c.repeated {
				name, key, value, ok := s.host.StillHeldLocked(c.Held, c.Raw)
				if ok {
					c.name, c.Key, c.Value, c.Unchanged = name, key, value, true
					continue
				}
				c.repeated = false
				c.Hash = maphash.Bytes(s.cfg.HashSeed, c.Raw)
			}
			name, value, at, ok := s.host.CachedLocked(typeURL, c.Wrapper, c.Hash, c.Raw, c.Held)
			if at != nil {
				c.Held = at
			}
			if ok {
				c.name, c.Value = name, value
			}
		}
		s.cfg.Lock.Unlock()
		if len(rest) > 0 {
			s.yieldToCallers()
		}
	}
}

// decodeResource decodes and validates one resource. The name is
// returned whenever it is known, also with an error.
func (s *stream) decodeResource(typ registry.ResourceType, wrapperName string, raw []byte) (string, registry.Resource, error) {
	opts := &s.decodeOpts
	if wrapperName != "" {
		withName := *opts
		withName.WrapperName = wrapperName
		opts = &withName
	}
	dr, err := typ.Decode(raw, *opts)
	if err == nil && wrapperName != "" && dr.Name != wrapperName && !s.sameResourceName(typ.TypeURL, dr.Name, wrapperName) {
		// Which of the two names is meant cannot be known; the wrapper's
		// is the one the protocol defines, so the NACK is charged to it.
		return wrapperName, nil, fmt.Errorf("resource name %s does not match its Resource wrapper's name %s", QuoteName(dr.Name), QuoteName(wrapperName))
	}
	return dr.Name, dr.Resource, err
}

// sameResourceName reports whether two names are one resource: equal, or
// xdstp:// names with one canonical form (A47).
func (s *stream) sameResourceName(typeURL, a, b string) bool {
	ka, errA := s.host.ResolveName(typeURL, a)
	kb, errB := s.host.ResolveName(typeURL, b)
	return errA == nil && errB == nil && ka == kb
}

// checkResource adds resource i to the response, or its failure to the
// NACK: a resource whose name cannot be learned, does not resolve or
// repeats an earlier one is not applied.
func (s *stream) checkResource(r *Response, t *tally, i int, c *candidate) {
	if c.name == "" {
		r.Complete = false
		t.fail("resource index %d: %v", i, c.Err)
		return
	}
	key := c.Key // known for an unchanged resource
	if !c.Unchanged {
		var err error
		if key, err = s.host.ResolveName(r.Type.TypeURL, c.name); err != nil {
			// Not a name anyone can watch, so not one of the cached ones.
			t.fail("resource index %d, name %s: %v", i, QuoteName(c.name), err)
			return
		}
	}
	if !s.addKey(r, i, key) {
		// The first one counts; a second could only contradict it.
		t.fail("resource index %d, name %s: duplicate resource name %s", i, QuoteName(c.name), QuoteName(c.name))
		return
	}
	if c.Err != nil {
		t.fail("resource index %d, name %s: %v", i, QuoteName(c.name), c.Err)
	} else {
		r.Valid++
	}
	c.Key = key
	// In place: the write index never passes the read index, and until a
	// resource is left out it is the read index, where the candidate
	// already is (a copy of every one would be most of this function).
	if n := len(r.Resources); n < cap(r.Resources) && &r.Resources[:n+1][n] == c {
		r.Resources = r.Resources[:n+1]
		return
	}
	r.Resources = append(r.Resources, *c)
}

// addKey adds the key of resource i to Named and reports whether it was
// new. While every key checked is the one at its index in the last
// response (sameKeys), none is added: those keys are distinct, so a key
// can repeat only where one differs, and the map is filled from there on.
func (s *stream) addKey(r *Response, i int, key string) bool {
	if last := r.sameKeys; last != nil {
		if i < len(last.keys) && last.keys[i] == key {
			return true
		}
		s.fillNamed(r)
	}
	return addName(r.Named, key)
}

// fillNamed gives the response its Named map, with the keys of the
// resources checked so far, and ends the comparison with the last
// response.
func (s *stream) fillNamed(r *Response) {
	r.Named = s.scratch.namedMap(r.namedSize)
	for i := range r.Resources {
		r.Named[r.Resources[i].Key] = true
	}
	r.sameKeys = nil
}

// endKeys is called once every resource is checked, before the TP3
// entries. If every key was the one at its index in the last response,
// and there are as many, they are the last response's keys, and Named is
// its map (namedKept), or nil when none was kept (NamedKeys fills it).
// TP3 entries would have to be added to that map: with any, Named is
// filled instead.
func (s *stream) endKeys(r *Response, tp3 int) {
	last := r.sameKeys
	if last == nil {
		return
	}
	if tp3 == 0 && len(r.Resources) == last.count {
		r.Named, r.namedKept, r.sameKeys = last.named, true, nil
		return
	}
	s.fillNamed(r)
}

// addName adds key to named and reports whether it was new: one hash of
// the key, where a lookup and an insert would take two.
func addName(named map[string]bool, key string) bool {
	n := len(named)
	named[key] = true
	return len(named) > n
}

// checkResourceError adds entry i of an xRFC TP3 resource_errors list to
// the response. An entry that is not an error (no name, code OK) is
// NACKed, as gRPC C-core does: a watcher never sees an error whose code
// is OK.
func (s *stream) checkResourceError(r *Response, t *tally, i int, re *discoverypb.ResourceError) {
	name := re.GetResourceName().GetName()
	code := codes.Code(re.GetErrorDetail().GetCode())
	switch {
	case name == "":
		// An error for a resource that is not named could be for any:
		// as for a nameless resource, nothing is deleted by absence.
		r.Complete = false
		t.fail("resource_errors index %d: resource_name unset", i)
		return
	case code == codes.OK:
		t.fail("resource_errors index %d, name %s: error_detail must be non-OK", i, QuoteName(name))
		return
	case code > codes.Unauthenticated:
		t.fail("resource_errors index %d, name %s: error_detail code %d is not a gRPC status code", i, QuoteName(name), uint32(code))
		return
	}
	key, err := s.host.ResolveName(r.Type.TypeURL, name)
	if err != nil {
		t.fail("resource_errors index %d, name %s: cannot parse xDS resource name: %v", i, QuoteName(name), err)
		return
	}
	if !addName(r.Named, key) {
		t.fail("resource_errors index %d, name %s: duplicate resource name %s", i, QuoteName(name), QuoteName(name))
		return
	}
	t.invalid++
	msg := strings.ToValidUTF8(re.GetErrorDetail().GetMessage(), "\uFFFD")
	r.Errors = append(r.Errors, ResourceError{Key: key, Code: uint32(code), Message: msg})
}

// maxScratch bounds the responses, in resources, whose working memory a
// stream keeps for the next: a response of 1,000 resources needs some
// 250 KB of it, which is then not allocated again for every response,
// while the memory kept for a stream stays bounded (about 2 MB).
const maxScratch = 8192

// scratch is a stream's working memory for one response at a time: the
// envelope's resources, the candidates and the Named map. Only the
// receiving goroutine uses it, and what the host keeps of a response
// (values, bytes, keys) is copied out of it, not referenced.
type scratch struct {
	envelope []rawAny
	cands    []candidate
	used     int // candidates handed out for the response under way
	// large is the candidates of a response of more than maxScratch
	// resources, until it is released to largeCandidates.
	large []candidate
	named map[string]bool
}

// largeCandidates and largeEnvelopes hold the arrays of responses too
// large for a stream to keep (maxScratch) until the collector has run
// twice: a stream that keeps receiving responses of 100,000 resources
// reuses them, instead of having 20 MB of fresh memory zeroed and
// faulted in for each, and what streams that went quiet leave is taken
// back.
var largeCandidates, largeEnvelopes sync.Pool // of *[]candidate, *[]rawAny

// idleScratch holds the working memory of streams that ended, for the
// next stream's receiving goroutine: a stream that replaces one (a
// reconnect, a fallback) or another engine's reads its first response
// into memory that is sized already, rather than into fresh memory
// zeroed and grown for it. The collector takes back what stays unused.
var idleScratch = sync.Pool{New: func() any { return new(scratch) }}

// candidates returns n zeroed candidates, from the kept array when it is
// large enough.
func (sc *scratch) candidates(n int) []candidate {
	if n > maxScratch {
		sc.used = 0
		if p, _ := largeCandidates.Get().(*[]candidate); p != nil && cap(*p) >= n {
			sc.large = (*p)[:n]
		} else {
			sc.large = make([]candidate, n)
		}
		return sc.large
	}
	if cap(sc.cands) < n {
		sc.cands = make([]candidate, n, max(n, 64))
	}
	sc.used = n
	return sc.cands[:n]
}

// namedMap returns an empty map for a response's Named, the kept one when
// the response is small enough to keep.
func (sc *scratch) namedMap(n int) map[string]bool {
	if n > maxScratch {
		return make(map[string]bool, n)
	}
	if sc.named == nil {
		sc.named = make(map[string]bool, n)
	}
	return sc.named
}

// envelopeArray returns the array to read the next envelope's resources
// into: the one kept, or else a large one released by any stream, or
// none (parseEnvelope then sizes one).
func (sc *scratch) envelopeArray() []rawAny {
	if cap(sc.envelope) == 0 {
		if p, _ := largeEnvelopes.Get().(*[]rawAny); p != nil {
			return *p
		}
	}
	return sc.envelope
}

// keepEnvelope keeps the array of an envelope's resources for the next
// one, without the slices of the response it held. A large one goes to
// largeEnvelopes, and the stream keeps none, so that its next response
// is read into that one rather than grown, step by step, from a small
// one kept before.
func (sc *scratch) keepEnvelope(resources []rawAny) {
	clear(resources)
	resources = resources[:0]
	if cap(resources) > maxScratch {
		largeEnvelopes.Put(&resources)
		sc.envelope = nil
		return
	}
	sc.envelope = resources
}

// release is called once a response is applied (or dropped): what its
// candidates and Named map referenced may go.
func (sc *scratch) release() {
	clear(sc.cands[:sc.used])
	sc.used = 0
	if sc.large != nil {
		// Only a prefix of the array is used at a time, and each use
		// clears it: the rest is zero already.
		clear(sc.large)
		large := sc.large
		largeCandidates.Put(&large)
		sc.large = nil
	}
	clear(sc.named)
}
