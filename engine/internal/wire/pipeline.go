package wire

import (
	"runtime"
	"sync"
	"sync/atomic"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsengine/xdsengine/registry"
)

// A large SotW response is decoded and applied at once: its resources are
// decoded in chunks by GOMAXPROCS-1 workers while the receiving goroutine
// checks them, in order, and applies them part by part as they become
// ready, decoding chunks itself whenever it would otherwise wait. Applying
// no longer waits for the last resource to be decoded, and one core is not
// left idle while the other applies.
//
// Nothing about the order the host sees changes: resources are checked in
// the order of the response (the first of two with one name counts),
// applied in that order, and the response is finished, answered and its
// TP3 entries applied only once every resource is. A resource applied
// before a later one of the same response fails is what happened already
// with parts: a response is applied resource by resource, and the NACK
// follows.

// pending is what is left to check of a response whose resources are
// still being decoded: Response.pending, until every candidate is
// checked. Only the receiving goroutine touches it.
type pending struct {
	cands []candidate
	errs  []*discoverypb.ResourceError
	t     *tally
	next  int // the next candidate to check
	pipe  *pipeline
}

// pipeline decodes a response's candidates in chunks of parallelChunk.
type pipeline struct {
	s     *stream
	typ   registry.ResourceType
	cands []candidate
	todo  []int // the candidates to decode, in order
	taken atomic.Int64
	done  []chan struct{} // closed when the chunk is decoded
	stop  atomic.Bool
	wg    sync.WaitGroup
	seen  int // chunks the receiving goroutine has waited for
}

// decodable lists the candidates the cache did not answer. They are
// counted first: in a re-sent response nearly all are answered, and a
// list sized for every candidate would be most of what the response
// allocates. A pipeline keeps the list, so it is not scratch.
func decodable(cands []candidate) []int {
	undecided := func(c *candidate) bool { return c.Err == nil && c.Value == nil }
	n := 0
	for i := range cands {
		if undecided(&cands[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	todo := make([]int, 0, n)
	for i := range cands {
		if undecided(&cands[i]) {
			todo = append(todo, i)
		}
	}
	return todo
}

// pipelined reports whether a response with todo resources to decode is
// decoded while it is applied: it takes two processors, and enough work
// to be worth a goroutine.
func pipelined(todo []int) bool {
	return len(todo) >= parallelMin && runtime.GOMAXPROCS(0) >= 2
}

// startPipeline starts decoding the candidates of todo, and leaves their
// checks to the apply stage.
func (s *stream) startPipeline(typ registry.ResourceType, r *Response, t *tally, cands []candidate, errs []*discoverypb.ResourceError, todo []int) {
	chunks := (len(todo) + parallelChunk - 1) / parallelChunk
	p := &pipeline{s: s, typ: typ, cands: cands, todo: todo, done: make([]chan struct{}, chunks)}
	for k := range p.done {
		p.done[k] = make(chan struct{})
	}
	workers := min(runtime.GOMAXPROCS(0)-1, chunks)
	p.wg.Add(workers)
	for w := 0; w < workers; w++ {
		go p.work()
	}
	r.pending = &pending{cands: cands, errs: errs, t: t, pipe: p}
}

func (p *pipeline) work() {
	defer p.wg.Done()
	yields := startYieldClock()
	for !p.stop.Load() {
		k := int(p.taken.Add(1)) - 1
		if k >= len(p.done) {
			return
		}
		p.decodeChunk(k)
		// The workers and the receiving goroutine fill every P: between
		// chunks, let a runnable Watch call (or anything else) have one,
		// rather than wait for the scheduler's 10 ms preemption.
		yields.yieldIfLong()
	}
}

func (p *pipeline) decodeChunk(k int) {
	for _, i := range p.todo[k*parallelChunk : min((k+1)*parallelChunk, len(p.todo))] {
		p.s.decodeOne(p.typ, &p.cands[i])
	}
	close(p.done[k])
}

// await returns once chunk k is decoded, decoding chunks nobody has taken
// meanwhile.
func (p *pipeline) await(k int) {
	for {
		select {
		case <-p.done[k]:
			return
		default:
		}
		if j := int(p.taken.Add(1)) - 1; j < len(p.done) {
			p.decodeChunk(j)
			continue
		}
		<-p.done[k]
		return
	}
}

// readyUpTo waits for the next chunk and returns how many candidates,
// from the first, are decoded: those up to the chunk's last.
func (p *pipeline) readyUpTo() int {
	if p.seen == len(p.done) {
		return len(p.cands)
	}
	k := p.seen
	p.await(k)
	p.seen++
	if p.seen == len(p.done) {
		return len(p.cands)
	}
	return p.todo[(k+1)*parallelChunk-1] + 1
}

// end stops the workers and waits for them: the response is applied, or
// dropped because the stream ended.
func (p *pipeline) end() {
	p.stop.Store(true)
	p.wg.Wait()
}

// checkMore checks candidates of a response that is being decoded, with
// no lock held, until at least want resources beyond the first applied
// are ready to apply or every candidate is checked; then it checks the
// TP3 entries and completes the counts, as decodeCandidates does.
func (s *stream) checkMore(r *Response, applied, want int) {
	pd := r.pending
	if pd == nil {
		return
	}
	for pd.next < len(pd.cands) && len(r.Resources)-applied < want {
		end := pd.pipe.readyUpTo()
		for ; pd.next < end; pd.next++ {
			s.checkResource(r, pd.t, pd.next, &pd.cands[pd.next])
		}
	}
	if pd.next < len(pd.cands) {
		return
	}
	pd.pipe.end()
	s.checkErrors(r, pd.t, pd.errs)
	r.pending = nil
}

// dropPending ends the decoding of a response that will not be applied.
func (r *Response) dropPending() {
	if r != nil && r.pending != nil {
		r.pending.pipe.end()
		r.pending = nil
	}
}
