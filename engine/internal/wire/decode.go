package wire

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/registry"
)

// candidate is what stage 1 learns of one resource of a response: a
// Resource, whose Key is set once its name is checked. A response's
// parts are its candidates, compacted in place.
type candidate = Resource

// decoding is one response of a registered type in stage 1: its
// resources are looked up in the memo, the rest decoded (in parallel for
// a large one, see pipeline.go), then checked in order, part by part, as
// the host applies them. Only the receiving goroutine uses it; it holds
// the server's memo until end.
type decoding struct {
	s       *stream
	resp    *Response
	typ     *registry.ResourceType
	nonce   string
	cands   []candidate
	errs    []*discoverypb.ResourceError
	removed []string // incremental: removed_resources
	memo    *Memo
	tm      *typeMemo
	sotw    bool
	t       tally
	// next is the next candidate to check, kept how many were kept so
	// far (compacted into cands[:kept]), ready how many are decoded.
	next, kept, ready int
	pipe              *pipeline
	tp3               map[string]bool // the TP3 entries' keys
	finished          bool
	// subscribed are the names the last request of the type named, when
	// the response began.
	subscribed []string
	// sum is the response's hash, and changes the count of the type's
	// subscription changes when it was read (see handle).
	sum, changes uint64
}

// decode starts stage 1 for a response of a registered type: candidates
// whose bytes the memo knows take its value, and the others are decoded,
// all at once or, for a large SotW response, while the host applies the
// first parts.
func (s *stream) decode(resp *Response, nonce string, cands []candidate, errs []*discoverypb.ResourceError, removed []string, sotw bool) *decoding {
	d := &decoding{s: s, resp: resp, typ: resp.Type, nonce: nonce, cands: cands, errs: errs, removed: removed,
		memo: s.cfg.Memo, sotw: sotw, ready: len(cands)}
	resp.Complete = sotw
	resp.named = d.named
	d.memo.mu.Lock()
	d.tm = d.memo.forType(resp.TypeURL)
	s.mu.Lock()
	var forget []string
	if st := s.types[resp.TypeURL]; st != nil {
		forget, st.forget, d.subscribed = st.forget, nil, st.last
	}
	s.mu.Unlock()
	d.tm.forget(forget)
	d.tm.begin(len(cands), sotw)
	var todo []int
	if len(d.tm.byKey) == 0 {
		// Nothing is known yet (a first response): every resource is
		// decoded, and the list is made once rather than grown.
		todo = make([]int, 0, len(cands))
	}
	for i := range cands {
		c := &cands[i]
		if c.Err != nil {
			continue
		}
		if d.tm.lookup(d.memo, d.typ, c, i) {
			e := c.memo
			c.known = true
			c.name, c.Key, c.Raw = d.tm.sentName(e.key), e.key, e.raw
			c.Value, c.Err = e.result()
			continue
		}
		todo = append(todo, i)
	}
	if sotw && pipelined(todo) {
		d.pipe = startPipeline(d, todo)
		d.ready = 0
		return d
	}
	s.decodeAll(d, todo)
	return d
}

// decodeOne decodes and validates one candidate.
func (s *stream) decodeOne(typ *registry.ResourceType, c *candidate) {
	// The bytes alias the whole response; the host keeps them, and must
	// neither keep the response alive with them nor see them change when
	// the transport reads another response into its memory (Recycler).
	c.Raw = bytes.Clone(c.Raw)
	opts := s.decodeOpts
	opts.WrapperName = c.wrapper
	dr, err := typ.Decode(c.Raw, opts)
	c.name, c.Value, c.Err = dr.Name, dr.Resource, err
	if err == nil && c.wrapper != "" && dr.Name != c.wrapper && !s.sameResourceName(typ.TypeURL, dr.Name, c.wrapper) {
		// Which of the two names is meant cannot be known; the wrapper's
		// is the one the protocol defines, so the NACK is charged to it.
		c.name, c.Value = c.wrapper, nil
		c.Err = fmt.Errorf("resource name %s does not match its Resource wrapper's name %s", QuoteName(dr.Name), QuoteName(c.wrapper))
	}
}

// sameResourceName reports whether two names are one resource: equal, or
// xdstp:// names with one canonical form (A47).
func (s *stream) sameResourceName(typeURL, a, b string) bool {
	ka, errA := s.cfg.Names.Key(typeURL, a)
	kb, errB := s.cfg.Names.Key(typeURL, b)
	return errA == nil && errB == nil && ka == kb
}

// decodeAll decodes the candidates of todo. Resources are independent and
// decoders safe for concurrent use (a registry rule), so a large response
// is decoded by this goroutine and at most GOMAXPROCS-1 workers.
func (s *stream) decodeAll(d *decoding, todo []int) {
	if len(todo) < parallelMin || runtime.GOMAXPROCS(0) < 2 {
		for _, i := range todo {
			s.decodeOne(d.typ, &d.cands[i])
		}
		return
	}
	p := startPipeline(d, todo)
	for p.readyUpTo() < len(d.cands) {
	}
	p.end()
}

// nextPart checks candidates, in order, until ApplyPart of them are kept
// or none is left, and returns them; last says that the response is
// checked whole, its TP3 entries and removals included.
func (d *decoding) nextPart() (part []Resource, last bool) {
	start := d.kept
	for d.next < len(d.cands) && d.kept-start < ApplyPart {
		for d.next >= d.ready {
			d.ready = d.pipe.readyUpTo()
		}
		d.check(d.next)
		d.next++
	}
	if d.next == len(d.cands) && !d.finished {
		d.finish()
	}
	return d.cands[start:d.kept:d.kept], d.finished
}

// check keeps candidate i, or adds its failure to the NACK: a resource
// whose name cannot be learned, does not resolve or repeats an earlier
// one is not handed over.
func (d *decoding) check(i int) {
	c := &d.cands[i]
	if c.name == "" {
		// A resource whose name is unknown could be any resource: nothing
		// is deleted by absence.
		d.resp.Complete = false
		d.t.fail("resource index %d: %v", i, c.Err)
		return
	}
	key := c.Key // known for a resource the memo knew
	if !c.known {
		var err error
		if key, err = d.s.cfg.Names.Key(d.typ.TypeURL, c.name); err != nil {
			// Not a name anyone can watch, so not one of the cached ones.
			d.t.fail("resource index %d, name %s: %v", i, QuoteName(c.name), err)
			return
		}
	}
	if !d.tm.record(c, i, key, c.known) {
		// The first one counts; a second could only contradict it.
		d.t.fail("resource index %d, name %s: duplicate resource name %s", i, QuoteName(c.name), QuoteName(c.name))
		return
	}
	c.Key = key
	if c.Err != nil {
		d.t.fail("resource index %d, name %s: %v", i, QuoteName(c.name), c.Err)
	} else {
		d.resp.Valid++
	}
	if d.kept != i {
		d.cands[d.kept] = *c
	}
	d.kept++
}

// finish checks what comes after the resources: the TP3 entries, an
// incremental response's removals, and the response's counts.
func (d *decoding) finish() {
	d.finished = true
	if d.pipe != nil {
		d.pipe.end()
	}
	if !d.s.cfg.DecodeOptions.Switches.DisableDataErrorHandling {
		for i, re := range d.errs {
			d.checkResourceError(i, re)
		}
	}
	for i, name := range d.removed {
		key, err := d.s.cfg.Names.Key(d.typ.TypeURL, name)
		switch {
		case name == "":
			d.t.fail("removed_resources index %d: empty name", i)
		case err != nil:
			d.t.fail("removed_resources index %d, name %s: cannot parse xDS resource name: %v", i, QuoteName(name), err)
		case d.named(key):
			d.t.fail("removed_resources index %d, name %s: also in resources or resource_errors", i, QuoteName(name))
		default:
			d.resp.Removed = append(d.resp.Removed, key)
			d.tm.forget([]string{key})
		}
	}
	d.resp.Invalid = d.t.invalid
	d.resp.Accepted = d.resp.Valid > 0 || len(d.t.failures) == 0
}

// named reports whether the response named key, in a resource or a TP3
// entry.
func (d *decoding) named(key string) bool { return d.tm.isNamed(key) || d.tp3[key] }

// checkResourceError adds entry i of an xRFC TP3 resource_errors list to
// the response. An entry that is not an error (no name, code OK) is
// NACKed, as gRPC C-core does: a watcher never sees an error whose code
// is OK.
func (d *decoding) checkResourceError(i int, re *discoverypb.ResourceError) {
	name := re.GetResourceName().GetName()
	code := codes.Code(re.GetErrorDetail().GetCode())
	switch {
	case name == "":
		// An error for a resource that is not named could be for any:
		// as for a nameless resource, nothing is deleted by absence.
		d.resp.Complete = false
		d.t.fail("resource_errors index %d: resource_name unset", i)
		return
	case code == codes.OK:
		d.t.fail("resource_errors index %d, name %s: error_detail must be non-OK", i, QuoteName(name))
		return
	case code > codes.Unauthenticated:
		d.t.fail("resource_errors index %d, name %s: error_detail code %d is not a gRPC status code", i, QuoteName(name), uint32(code))
		return
	}
	key, err := d.s.cfg.Names.Key(d.typ.TypeURL, name)
	if err != nil {
		d.t.fail("resource_errors index %d, name %s: cannot parse xDS resource name: %v", i, QuoteName(name), err)
		return
	}
	if d.named(key) {
		d.t.fail("resource_errors index %d, name %s: duplicate resource name %s", i, QuoteName(name), QuoteName(name))
		return
	}
	if d.tp3 == nil {
		d.tp3 = make(map[string]bool)
	}
	d.tp3[key] = true
	d.t.invalid++
	msg := strings.ToValidUTF8(re.GetErrorDetail().GetMessage(), "\uFFFD")
	d.resp.Errors = append(d.resp.Errors, ResourceError{Key: key, Code: uint32(code), Message: msg})
}

// end releases the response: the decoding's workers stop, and the memo
// keeps what it learned. Called once the host applied the last part, or
// once the stream ended between parts.
func (d *decoding) end() {
	if d.pipe != nil {
		d.pipe.end()
	}
	complete := d.finished && d.resp.Complete && d.typ.AllResourcesRequiredInSotW
	d.tm.end(d.sotw, d.sotw && complete, d.subscribed)
	d.memo.mu.Unlock()
	releaseCandidates(d.cands)
}

// A response's working memory (the envelope's resources, the candidates)
// comes from pools every stream shares, and the collector empties when it
// stays unused: a stream's next response, or a new stream's first (after
// a reconnect, or another engine's), reuses arrays sized already, rather
// than having 180 KB zeroed and grown for 1,000 resources, or 18 MB for
// 100,000.
var candidateArrays, envelopeArrays sync.Pool // of *[]candidate, *[]rawAny

// candidates returns n zeroed candidates.
func candidates(n int) []candidate {
	if p, _ := candidateArrays.Get().(*[]candidate); p != nil && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]candidate, n, max(n, 64))
}

// releaseCandidates drops what a response's candidates referenced, and
// gives their array back.
func releaseCandidates(cands []candidate) {
	clear(cands)
	cands = cands[:0]
	candidateArrays.Put(&cands)
}
