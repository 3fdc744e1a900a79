package lastgood

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// The long run (about ten minutes on 2 cores):
//
//	TMPDIR=/dev/shm go test ./lastgood/ -run '^TestStoreMatchesModel$' -count=1 -timeout 2h -v -lastgood.histories=100000
//
// TMPDIR on a tmpfs, so that the run is bound by the store's work rather
// than by the disk's fsyncs. -lastgood.seed replays a failure's steps in
// this process; when the kills come, and so what the children commit,
// is not replayed.
var (
	modelHistories = flag.Int("lastgood.histories", 0, "histories TestStoreMatchesModel runs; 0: a short pass")
	modelSeed      = flag.Uint64("lastgood.seed", 0, "seed of TestStoreMatchesModel's histories; 0: from the clock")
)

const (
	// modelShortPass is how many histories a plain go test runs: a few
	// seconds under -race.
	modelShortPass = 64
	// modelBatch is how many histories share a child process: killing it
	// crashes all of them at once, each at its own point, for the cost of
	// one process.
	modelBatch = 16
	// modelRounds is how many rounds of changes, each ended by a crash,
	// a history goes through.
	modelRounds = 2
	// modelChildSets bounds the change sets a child applies to a store
	// before it waits to be killed.
	modelChildSets = 40
)

// modelDigests are what the histories' change sets are written for:
// almost always the first; now and then another, which replaces the
// store's content, and the next change set replaces it again.
var modelDigests = [][]byte{[]byte("node-and-bootstrap"), []byte("another-node"), []byte("another-bootstrap")}

// modelSet is change set g of the history seeded with seed: the same in
// the test and in a child process, so that the child needs only the seed
// and where to start. Keeps and deletes over 24 keys (two authorities,
// two types, six names), resources from empty to half a MiB.
func modelSet(seed uint64, g int) (digest []byte, changes []storage.Change) {
	r := rand.New(rand.NewPCG(seed, uint64(g)))
	digest = modelDigests[0]
	if r.IntN(25) == 0 {
		digest = modelDigests[1+r.IntN(len(modelDigests)-1)]
	}
	n := r.IntN(8)
	for i := range n {
		c := storage.Change{Resource: storage.Resource{
			Authority: []string{"", "a.example"}[r.IntN(2)],
			TypeURL:   []string{clusterType, "type.googleapis.com/acme.Other"}[r.IntN(2)],
			Name:      "r" + strconv.Itoa(r.IntN(6)),
		}}
		if r.IntN(4) == 0 {
			c.Delete = true
			changes = append(changes, c)
			continue
		}
		c.Server = []string{"xds-1.example.com:443", "xds-2.example.com:443"}[r.IntN(2)]
		c.Version = strconv.Itoa(g)
		c.Received = received.Add(time.Duration(g)*time.Second + time.Duration(r.IntN(1e9)))
		if r.IntN(4) == 0 {
			c.Expires = c.Received.Add(time.Duration(1+r.IntN(3600)) * time.Second)
		}
		size := r.IntN(300)
		switch x := r.IntN(100); {
		case x >= 94:
			size = 64<<10 + r.IntN(448<<10)
		case x >= 75:
			size = 300 + r.IntN(8<<10)
		}
		// Bytes that say which resource of which change set they are, so
		// that bytes from another are not taken for these.
		c.Raw = make([]byte, size)
		var stamp [16]byte
		binary.LittleEndian.PutUint64(stamp[:], seed)
		binary.LittleEndian.PutUint32(stamp[8:], uint32(g))
		binary.LittleEndian.PutUint32(stamp[12:], uint32(i))
		for j := 0; j < size; j += len(stamp) {
			copy(c.Raw[j:], stamp[:])
		}
		changes = append(changes, c)
	}
	return digest, changes
}

// modelState is what the store holds, as the model has it.
type modelState struct {
	digest []byte
	res    map[key]storage.Resource
}

// apply is the state after a change set, as Apply documents it.
func (m modelState) apply(digest []byte, changes []storage.Change) modelState {
	if bytes.Equal(digest, m.digest) && len(changes) == 0 {
		return m
	}
	next := modelState{digest: digest, res: map[key]storage.Resource{}}
	if bytes.Equal(digest, m.digest) {
		next.res = maps.Clone(m.res)
	}
	for _, c := range changes {
		k := key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}
		if c.Delete {
			delete(next.res, k)
		} else {
			next.res[k] = c.Resource
		}
	}
	return next
}

// loaded is what a store opened and loaded.
type loaded struct {
	digest  []byte
	res     []storage.Resource
	corrupt int
	moved   string
}

func (l loaded) reported() bool { return l.corrupt > 0 || l.moved != "" }

// is reports whether l is exactly the state m.
func (l loaded) is(m modelState) bool {
	return len(l.res) == len(m.res) && l.within(m) && (len(l.res) > 0 || bytes.Equal(l.digest, m.digest))
}

// within reports whether every resource l holds is as m held it (and no
// two under one key).
func (l loaded) within(m modelState) bool {
	if len(l.res) == 0 {
		return true
	}
	if !bytes.Equal(l.digest, m.digest) {
		return false
	}
	seen := make(map[key]bool, len(l.res))
	for _, r := range l.res {
		k := key{authority: r.Authority, typeURL: r.TypeURL, name: r.Name}
		want, ok := m.res[k]
		if !ok || seen[k] || !sameResource(want, r) {
			return false
		}
		seen[k] = true
	}
	return true
}

// history is one store, from empty, and its model.
type history struct {
	t    *testing.T
	id   int
	seed uint64
	rng  *rand.Rand
	path string
	s    *Store // the writer, while this process holds the store
	next int    // the number of the next change set
	cur  modelState
	// past holds the states the store went through since it was last
	// found corrupt: a corruption reported may take it back to any.
	past  []modelState
	steps []string // what the history did, for a failure's report
	stats *modelStats
}

type modelStats struct {
	histories, applied, childApplied, kills, cutShort, rewritesCut int
	corruptions, corruptReported, corruptSilent, movedAside        int
}

func (h *history) logf(format string, args ...any) {
	h.steps = append(h.steps, fmt.Sprintf(format, args...))
}

// fail ends the test with the history's steps and a copy of its files.
func (h *history) fail(format string, args ...any) {
	h.t.Helper()
	kept := "(not kept)"
	if dir, err := os.MkdirTemp("", "lastgood-model-failure-*"); err == nil {
		files, _ := filepath.Glob(h.path + "*")
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
			}
		}
		kept = dir
	}
	h.t.Fatalf("history %d (seed %d; -lastgood.seed=%d): %s\nsteps:\n  %s\nits files are kept in %s",
		h.id, h.seed, *modelSeed, fmt.Sprintf(format, args...), strings.Join(h.steps, "\n  "), kept)
}

func (h *history) commit(m modelState) {
	h.cur = m
	h.past = append(h.past, m)
}

// open opens the writer and loads the store.
func (h *history) open() loaded {
	h.t.Helper()
	if h.s != nil {
		h.fail("open: the store is open")
	}
	s, err := Open(h.path, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		h.fail("Open: %v", err)
	}
	h.s = s
	return h.load()
}

func (h *history) load() loaded {
	h.t.Helper()
	digest := h.s.Digest()
	l, err := h.s.Load(digest)
	if err != nil {
		h.fail("Load: %v", err)
	}
	return loaded{digest: digest, res: l.Resources, corrupt: l.Corrupt, moved: h.s.MovedAside()}
}

func (h *history) close() {
	if h.s != nil {
		if err := h.s.Close(); err != nil {
			h.fail("Close: %v", err)
		}
		h.s = nil
	}
}

// expect fails unless l is exactly one of the states want, with nothing
// reported, and returns which.
func (h *history) expect(what string, l loaded, want ...modelState) modelState {
	h.t.Helper()
	if l.reported() {
		h.fail("%s: Corrupt = %d, moved aside to %q; nothing was damaged", what, l.corrupt, l.moved)
	}
	for _, m := range want {
		if l.is(m) {
			return m
		}
	}
	also := ""
	if len(want) > 1 {
		also = " nor the one being written"
	}
	h.fail("%s: the store holds %d resources for %q, not the state committed (%d resources for %q)%s:\n%s",
		what, len(l.res), l.digest, len(want[0].res), want[0].digest, also,
		diffResources(slices.Collect(maps.Values(want[0].res)), l.res))
	return modelState{}
}

// apply applies the history's next change set in this process.
func (h *history) apply() {
	h.t.Helper()
	if h.s == nil {
		h.expect("reopened", h.open(), h.cur)
	}
	g := h.next
	h.next++
	digest, changes := modelSet(h.seed, g)
	if err := h.s.Apply(digest, changes); err != nil {
		h.fail("Apply of change set %d: %v", g, err)
	}
	h.logf("applied %d: %d changes for %q", g, len(changes), digest)
	h.stats.applied++
	h.commit(h.cur.apply(digest, changes))
}

// damage closes the store and changes one to three bytes of its file at
// random: a bit flipped, a byte changed, a byte set.
func (h *history) damage() {
	h.t.Helper()
	h.close()
	b, err := os.ReadFile(h.path)
	if err != nil {
		h.fail("reading the store to damage it: %v", err)
	}
	for range 1 + h.rng.IntN(3) {
		off := h.rng.IntN(len(b))
		was := b[off]
		switch h.rng.IntN(3) {
		case 0:
			b[off] ^= 1 << h.rng.IntN(8)
		case 1:
			b[off] ^= byte(1 + h.rng.IntN(255))
		default:
			b[off] = byte(h.rng.IntN(256))
		}
		h.logf("damaged byte %d of %d: %#02x -> %#02x", off, len(b), was, b[off])
	}
	if err := os.WriteFile(h.path, b, 0o600); err != nil {
		h.fail("writing the damaged store: %v", err)
	}
	h.stats.corruptions++
}

// judgeDamaged checks what a damaged store loaded: the state committed
// last (or, after a crash, the one being written) with nothing reported,
// or, reported, resources as one state of the model held them. The model
// then takes what was loaded as the store's state, which a reopening must
// find again with nothing reported: the damage was dealt with once.
func (h *history) judgeDamaged(l loaded, exact ...modelState) {
	h.t.Helper()
	if !l.reported() {
		h.stats.corruptSilent++
		h.commit(h.expect("damaged, nothing reported", l, exact...))
		return
	}
	h.stats.corruptReported++
	if l.moved != "" {
		h.stats.movedAside++
	}
	h.logf("reported: Corrupt = %d, moved aside to %q, %d resources loaded", l.corrupt, l.moved, len(l.res))
	found := false
	for _, m := range append(slices.Clone(h.past), exact...) {
		if l.within(m) {
			found = true
			break
		}
	}
	if !found {
		h.fail("damaged and reported, but loaded %d resources that no state of the model held together", len(l.res))
	}
	m := modelState{digest: l.digest, res: map[key]storage.Resource{}}
	for _, r := range l.res {
		m.res[key{authority: r.Authority, typeURL: r.TypeURL, name: r.Name}] = r
	}
	h.past = nil
	h.commit(m)
	h.close()
	h.expect("reopened after a corruption reported", h.open(), h.cur)
}

// changes runs a round of changes in this process: change sets applied,
// loaded, the store reopened, damaged; it ends with the store closed.
func (h *history) changes() {
	h.t.Helper()
	for range h.rng.IntN(7) {
		switch x := h.rng.IntN(100); {
		case x < 60:
			h.apply()
		case x < 72:
			if h.s != nil {
				h.expect("loaded by the writer", h.load(), h.cur)
			}
		case x < 85:
			h.close()
			h.expect("reopened", h.open(), h.cur)
		default:
			h.damage()
			h.judgeDamaged(h.open(), h.cur)
		}
	}
	h.close()
}

// afterCrash checks the store of a history whose writer was killed after
// change set acked was committed (from-1 for none): it holds the state
// after it or, if the kill came during the next one, after that one; and
// a crash alone is never reported as corruption. Now and then the file is
// damaged too before it is opened.
func (h *history) afterCrash(from, acked int) {
	h.t.Helper()
	for g := from; g <= acked; g++ {
		digest, changes := modelSet(h.seed, g)
		h.commit(h.cur.apply(digest, changes))
		h.stats.childApplied++
	}
	inFlight := h.cur.apply(modelSet(h.seed, acked+1))
	h.next = acked + 2
	h.logf("killed: change sets %d..%d committed by the child; %d being written", from, acked, acked+1)

	// What the crash left, as the file tells, for the statistics.
	if temps, _ := filepath.Glob(h.path + tempInfix + "*"); len(temps) > 0 {
		h.stats.rewritesCut++
	}
	if b, err := os.ReadFile(h.path); err == nil {
		if sc, err := scan(b); err == nil && sc.broken == nil && sc.end < int64(len(b)) {
			h.stats.cutShort++
			h.logf("a change set cut short: %d bytes after the last whole one, at %d", int64(len(b))-sc.end, sc.end)
		}
	}

	if h.rng.IntN(4) == 0 {
		h.damage()
		h.judgeDamaged(h.open(), h.cur, inFlight)
	} else {
		h.commit(h.expect("after the kill", h.open(), h.cur, inFlight))
	}
	h.close()
}

// TestStoreMatchesModel runs histories of a store against a model of it:
// change sets applied in this process and by child processes killed at
// random moments, files damaged at random bytes. After each step what
// Load returns is the state after the last change set whose Apply
// returned (or, after a kill, after the one being written), with nothing
// reported; or, if bytes were damaged, it is reported (Corrupt, or moved
// aside) and its resources are as some state of the model held them.
// Never, silently, an older state.
func TestStoreMatchesModel(t *testing.T) {
	histories := *modelHistories
	if histories <= 0 {
		histories = modelShortPass
	}
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
		*modelSeed = seed
	}
	base := t.TempDir()
	stats := &modelStats{}
	start := time.Now()
	for first := 0; first < histories; first += modelBatch {
		dir, err := os.MkdirTemp(base, "batch-")
		if err != nil {
			t.Fatal(err)
		}
		hs := make([]*history, min(modelBatch, histories-first))
		for i := range hs {
			id := first + i
			hs[i] = &history{
				t: t, id: id, seed: seed ^ uint64(id)*0x9e3779b97f4a7c15,
				rng:   rand.New(rand.NewPCG(seed, uint64(id))),
				path:  filepath.Join(dir, strconv.Itoa(id), "store"),
				cur:   modelState{res: map[key]storage.Resource{}},
				stats: stats,
			}
			hs[i].past = []modelState{hs[i].cur}
			hs[i].expect("created", hs[i].open(), hs[i].cur)
			hs[i].close()
		}
		for range modelRounds {
			for _, h := range hs {
				h.changes()
			}
			crash(t, hs)
		}
		for _, h := range hs {
			h.expect("at the end", h.open(), h.cur)
			h.close()
		}
		stats.histories += len(hs)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d: %d histories in %v: %d change sets applied here, %d by %d children killed (%d change sets cut short, %d rewrites cut); "+
		"%d damaged files: %d reported (%d moved aside), %d found the state committed",
		seed, stats.histories, time.Since(start).Round(time.Millisecond), stats.applied, stats.childApplied, stats.kills,
		stats.cutShort, stats.rewritesCut, stats.corruptions, stats.corruptReported, stats.movedAside, stats.corruptSilent)
}

// crash has a child process apply change sets to the histories' stores,
// each from its next one on, and kills it at a random moment.
func crash(t *testing.T, hs []*history) {
	t.Helper()
	var jobs strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&jobs, "%s %d %d\n", h.path, h.seed, h.next)
	}
	cmd, lines, stderr := startChild(t, strings.NewReader(jobs.String()), childEnv+"=model")
	acked := make([]int, len(hs))
	for i, h := range hs {
		acked[i] = h.next - 1
	}
	// fatal stops the child, and the goroutine that reads it, first.
	fatal := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		for range lines {
		}
		cmd.Wait()
		t.Fatalf(format+"\nthe child's stderr:\n%s", append(args, stderr.String())...)
	}
	ack := func(l string) {
		var i, g int
		if _, err := fmt.Sscan(l, &i, &g); err != nil || i < 0 || i >= len(hs) || g != acked[i]+1 {
			fatal("the child said %q: %v", l, err)
		}
		acked[i] = g
	}
	if l, ok := <-lines; !ok || l != "open" {
		fatal("the child did not open the stores: %q", l)
	}
	// From at once to long enough for most stores to have taken a few
	// change sets.
	r := hs[0].rng
	kill := time.After(time.Duration(r.IntN(10000)) * time.Microsecond)
	for waiting := true; waiting; {
		select {
		case l, ok := <-lines:
			if !ok {
				fatal("the child stopped before it was killed")
			}
			ack(l)
		case <-kill:
			waiting = false
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		fatal("killing the child: %v", err)
	}
	for l := range lines {
		ack(l)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Exited() {
		t.Fatalf("the child was not killed: %v\n%s", err, stderr.String())
	}
	hs[0].stats.kills++
	for i, h := range hs {
		h.afterCrash(h.next, acked[i])
	}
}

// childModel is the child of TestStoreMatchesModel: for each store named
// on its input (path, seed, first change set), it applies the history's
// change sets from the first on, printing "i g" once change set g of
// store i is committed; then it waits to be killed.
func childModel() int {
	type job struct {
		s    *Store
		seed uint64
		from int
	}
	var jobs []job
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		var path string
		var j job
		if _, err := fmt.Sscan(line, &path, &j.seed, &j.from); err != nil {
			fmt.Fprintf(os.Stderr, "job %q: %v\n", line, err)
			return 2
		}
		if j.s, err = Open(path, Options{LockTimeout: 10 * time.Second}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		jobs = append(jobs, j)
	}
	fmt.Println("open")
	failed := make(chan error)
	for i, j := range jobs {
		go func() {
			for g := j.from; g < j.from+modelChildSets; g++ {
				digest, changes := modelSet(j.seed, g)
				if err := j.s.Apply(digest, changes); err != nil {
					failed <- fmt.Errorf("store %d, change set %d: %w", i, g, err)
					return
				}
				fmt.Println(i, g)
			}
		}()
	}
	select {
	case err := <-failed:
		fmt.Fprintln(os.Stderr, err)
		return 1
	case <-time.After(time.Minute):
		fmt.Fprintln(os.Stderr, errors.New("not killed within a minute"))
		return 1
	}
}
