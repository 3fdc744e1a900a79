package wire

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A large response is decoded while it is applied: its resources are
// decoded in chunks by at most GOMAXPROCS-1 workers while the receiving
// goroutine checks them, in order, and hands them to the host part by
// part as they become ready, decoding chunks itself whenever it would
// otherwise wait. The workers run at most decodeAhead chunks ahead of the
// checks, so decoding paces itself to applying, and a response of
// 100,000 resources does not keep every processor busy until it is all
// decoded.
//
// Nothing about the order the host sees changes: resources are checked in
// the order of the response (the first of two with one name counts),
// handed over in that order, and the response is finished and answered
// only once every resource is.

// Parallel decoding: a response with at least parallelMin resources to
// decode is split into chunks of parallelChunk. Below that, starting
// goroutines costs more than it saves.
const (
	parallelMin   = 128
	parallelChunk = 32
	decodeAhead   = 8
)

// pipeline decodes a response's candidates of todo in chunks.
type pipeline struct {
	d     *decoding
	todo  []int // the candidates to decode, in order
	taken atomic.Int64
	done  []chan struct{} // closed when the chunk is decoded
	// room holds a token per chunk the workers may decode ahead of the
	// checks; stop ends them.
	room chan struct{}
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	seen int // chunks the receiving goroutine has waited for
}

// pipelined reports whether a response with todo resources to decode is
// decoded while it is applied: it takes two processors, and enough work
// to be worth a goroutine.
func pipelined(todo []int) bool {
	return len(todo) >= parallelMin && runtime.GOMAXPROCS(0) >= 2
}

func startPipeline(d *decoding, todo []int) *pipeline {
	chunks := (len(todo) + parallelChunk - 1) / parallelChunk
	p := &pipeline{d: d, todo: todo, done: make([]chan struct{}, chunks),
		room: make(chan struct{}, decodeAhead), stop: make(chan struct{})}
	for k := range p.done {
		p.done[k] = make(chan struct{})
	}
	for range decodeAhead {
		p.room <- struct{}{}
	}
	workers := min(runtime.GOMAXPROCS(0)-1, chunks)
	p.wg.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

func (p *pipeline) work() {
	defer p.wg.Done()
	for {
		select {
		case <-p.room:
		case <-p.stop:
			return
		}
		k := int(p.taken.Add(1)) - 1
		if k >= len(p.done) {
			return
		}
		p.decodeChunk(k)
	}
}

func (p *pipeline) decodeChunk(k int) {
	for _, i := range p.todo[k*parallelChunk : min((k+1)*parallelChunk, len(p.todo))] {
		p.d.s.decodeOne(p.d.typ, &p.d.cands[i])
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
		return len(p.d.cands)
	}
	k := p.seen
	p.await(k)
	p.seen++
	select {
	case p.room <- struct{}{}:
	default:
	}
	if p.seen == len(p.done) {
		return len(p.d.cands)
	}
	return p.todo[(k+1)*parallelChunk-1] + 1
}

// end stops the workers and waits for them: the response is checked, or
// dropped because the stream ended.
func (p *pipeline) end() {
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
}
