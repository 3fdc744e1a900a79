package lastgood

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/xdsengine/xdsengine/engine"
)

// minSlack is how far a small file may grow past its compacted size
// before it is rewritten, so that a store of a few resources is not
// rewritten at every change set.
const minSlack = 64 << 10

// maxKeptBuffer bounds the encoding buffer a Store keeps between change
// sets.
const maxKeptBuffer = 4 << 20

// limit is the largest the file may grow to when it would be live bytes
// long if rewritten: half as much again (the disk bound), or minSlack
// more.
func limit(live int64) int64 { return max(live+live/2, live+minSlack) }

// loc is where a resource's put record is in the file.
type loc struct {
	off    int64
	size   int
	source uint64
}

type sourceInfo struct {
	source
	recLen int // of its record
	refs   int // resources that name it
}

// state is what a writer knows of its file, without the resources'
// bytes.
type state struct {
	index      map[key]loc
	sources    map[uint64]*sourceInfo
	sourceIDs  map[source]uint64
	nextSource uint64
	// live is the length of the header, the sources in use and the
	// resources: the file's length if rewritten now, but for the index
	// of their records, which records and indexLen count.
	live     int64
	records  int
	indexLen int64 // the sizes of the records in the index
}

// compacted is the length the file would have if rewritten now.
func (st *state) compacted() int64 {
	return st.live + frameLen + 1 + int64(uvarintLen(uint64(st.records))) + st.indexLen
}

// count adds a record of size n to the compacted file (or, with sign -1,
// takes it away).
func (st *state) count(n int, sign int64) {
	st.live += sign * int64(n)
	st.records += int(sign)
	st.indexLen += sign * int64(uvarintLen(uint64(n)))
}

func newState(digest []byte) state {
	return state{
		index:     map[key]loc{},
		sources:   map[uint64]*sourceInfo{},
		sourceIDs: map[source]uint64{},
		live:      int64(headerLen(digest)),
	}
}

func (st *state) addSource(id uint64, src source) {
	st.sources[id] = &sourceInfo{source: src, recLen: len(appendSource(nil, id, src))}
	st.sourceIDs[src] = id
	st.nextSource = max(st.nextSource, id+1)
}

func (st *state) set(k key, l loc) {
	st.remove(k)
	st.index[k] = l
	st.count(l.size, 1)
	si := st.sources[l.source]
	si.refs++
	if si.refs == 1 {
		st.count(si.recLen, 1)
	}
}

func (st *state) remove(k key) {
	old, ok := st.index[k]
	if !ok {
		return
	}
	delete(st.index, k)
	st.count(old.size, -1)
	si := st.sources[old.source]
	si.refs--
	if si.refs == 0 {
		st.count(si.recLen, -1)
	}
}

// adopt takes what a scan of the file found as the writer's state.
func (s *Store) adopt(sc *scanned) {
	s.digest = sc.header.digest
	s.size = sc.end
	s.state = newState(sc.header.digest)
	for id, src := range sc.sources {
		s.addSource(id, src)
	}
	for k, e := range sc.entries {
		s.set(k, loc{off: e.off, size: e.size, source: e.put.source})
	}
}

// Apply writes a change set: appended to the file, or, when that would
// take the file past 1.5 times its compacted size (or when digest is not
// the store's), by writing the whole file anew beside it and renaming it
// over the store. Either way a crash leaves the store as before the
// change set or as after it. With another digest than the store's, the
// store's content is replaced by the change set's resources.
func (s *Store) Apply(digest []byte, changes []engine.StoreChange) error {
	if err := checkApply(digest, changes); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.readOnly:
		return ErrReadOnly
	case !bytes.Equal(digest, s.digest):
		return s.rewrite(digest, false, changes)
	case len(changes) == 0:
		return nil
	case s.needRewrite:
		return s.rewrite(digest, true, changes)
	}
	return s.appendChanges(changes)
}

func checkApply(digest []byte, changes []engine.StoreChange) error {
	if len(digest) > maxDigestLen {
		return fmt.Errorf("lastgood: Apply: the digest has %d bytes; at most %d", len(digest), maxDigestLen)
	}
	for i := range changes {
		c := &changes[i]
		if c.TypeURL == "" {
			return fmt.Errorf("lastgood: Apply: changes[%d].TypeURL: must not be empty", i)
		}
		if !c.Delete && len(c.Raw)+len(c.Name)+len(c.Version)+64 > maxRecordLen {
			return fmt.Errorf("lastgood: Apply: changes[%d].Raw: %d bytes; a resource is kept only up to %d",
				i, len(c.Raw), maxRecordLen-64)
		}
	}
	return nil
}

func (s *Store) appendChanges(changes []engine.StoreChange) error {
	b := s.buf[:0]
	locs := make([]loc, len(changes))
	var added map[source]uint64 // sources this change set defines
	records := 0
	grow := int64(0) // how much the compacted file grows, near enough to decide
	for i := range changes {
		c := &changes[i]
		k := key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}
		if old, ok := s.index[k]; ok {
			grow -= int64(old.size)
		}
		if c.Delete {
			b = appendDelete(b, k)
			records++
			continue
		}
		src := source{authority: c.Authority, server: c.Server, typeURL: c.TypeURL}
		id, ok := s.sourceIDs[src]
		if !ok {
			id, ok = added[src]
		}
		if !ok {
			id = s.nextSource + uint64(len(added))
			if added == nil {
				added = map[source]uint64{}
			}
			added[src] = id
			start := len(b)
			b = appendSource(b, id, src)
			records++
			grow += int64(len(b) - start)
		}
		start := len(b)
		b = appendPut(b, put{source: id, name: c.Name, version: c.Version, received: nanosFromTime(c.Received), raw: c.Raw})
		records++
		locs[i] = loc{off: s.size + int64(start), size: len(b) - start, source: id}
		grow += int64(locs[i].size)
	}
	b = appendCommit(b, records)
	if cap(b) <= maxKeptBuffer {
		s.buf = b
	}
	if s.size+int64(len(b)) > limit(s.compacted()+grow) {
		return s.rewrite(s.digest, true, changes)
	}
	_, err := s.f.WriteAt(b, s.size)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// No change set may follow a torn one, and after a failed sync the
		// file's pages are in doubt: cut the file back and have the next
		// change set write it anew.
		_ = s.f.Truncate(s.size)
		s.needRewrite = true
		return fmt.Errorf("lastgood: writing a change set to %s: %w", s.path, err)
	}
	for src, id := range added {
		s.addSource(id, src)
	}
	for i := range changes {
		c := &changes[i]
		k := key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}
		if c.Delete {
			s.remove(k)
		} else {
			s.set(k, locs[i])
		}
	}
	s.size += int64(len(b))
	return nil
}

type keyLoc struct {
	k key
	l loc
}

// rewrite writes the whole store anew, for digest: the resources kept
// (when keep is set) that changes do not touch, then the resources
// changes put. It writes a temporary file beside the store, syncs it and
// renames it over the store, then syncs the directory.
func (s *Store) rewrite(digest []byte, keep bool, changes []engine.StoreChange) error {
	last := make(map[key]int, len(changes)) // the change that counts, per key
	for i := range changes {
		c := &changes[i]
		last[key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}] = i
	}
	ids := map[source]uint64{}
	next := uint64(0)
	var kept []keyLoc
	if keep {
		maps.Copy(ids, s.sourceIDs)
		next = s.nextSource
		for k, l := range s.index {
			if _, changed := last[k]; !changed {
				kept = append(kept, keyLoc{k, l})
			}
		}
		slices.SortFunc(kept, func(a, b keyLoc) int { return cmp.Compare(a.l.off, b.l.off) })
	}
	used := map[uint64]source{}
	for _, kl := range kept {
		used[kl.l.source] = s.sources[kl.l.source].source
	}
	putIDs := make([]uint64, len(changes))
	for i := range changes {
		c := &changes[i]
		if c.Delete || last[key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}] != i {
			continue
		}
		src := source{authority: c.Authority, server: c.Server, typeURL: c.TypeURL}
		id, ok := ids[src]
		if !ok {
			id, next = next, next+1
			ids[src] = id
		}
		putIDs[i] = id
		used[id] = src
	}

	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(s.path)+tempInfix+"*")
	if err != nil {
		return fmt.Errorf("lastgood: rewriting the store: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 256<<10)
	ns := newState(digest)
	off := int64(headerLen(digest))
	w.Write(make([]byte, off)) // the header goes here once known
	b := s.buf[:0]
	var sizes []int // of the records, for the index
	for _, id := range slices.Sorted(maps.Keys(used)) {
		b = appendSource(b[:0], id, used[id])
		w.Write(b)
		ns.addSource(id, used[id])
		off += int64(len(b))
		sizes = append(sizes, len(b))
	}
	dropped := 0
	if len(kept) > 0 {
		r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.size), 256<<10)
		pos := int64(0)
		for _, kl := range kept {
			if _, err := r.Discard(int(kl.l.off - pos)); err != nil {
				return fmt.Errorf("lastgood: rewriting the store: reading it: %w", err)
			}
			b = slices.Grow(b[:0], kl.l.size)[:kl.l.size]
			if _, err := io.ReadFull(r, b); err != nil {
				return fmt.Errorf("lastgood: rewriting the store: reading it: %w", err)
			}
			pos = kl.l.off + int64(kl.l.size)
			if r, ok, checked := readRecord(b, 0); !ok || !checked || r.size != len(b) {
				dropped++ // changed on disk since it was written
				continue
			}
			w.Write(b)
			ns.set(kl.k, loc{off: off, size: kl.l.size, source: kl.l.source})
			off += int64(len(b))
			sizes = append(sizes, len(b))
		}
	}
	for i := range changes {
		c := &changes[i]
		k := key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}
		if c.Delete || last[k] != i {
			continue
		}
		b = appendPut(b[:0], put{source: putIDs[i], name: c.Name, version: c.Version, received: nanosFromTime(c.Received), raw: c.Raw})
		w.Write(b)
		ns.set(k, loc{off: off, size: len(b), source: putIDs[i]})
		off += int64(len(b))
		sizes = append(sizes, len(b))
	}
	indexOff := off
	b = appendIndex(b[:0], sizes)
	w.Write(b)
	off += int64(len(b))
	err = w.Flush()
	if err == nil {
		b = appendHeader(b[:0], header{digest: digest, snapshotEnd: off, indexOff: indexOff, snapshotPuts: uint32(len(ns.index))})
		_, err = tmp.WriteAt(b, 0)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if cap(b) <= maxKeptBuffer {
		s.buf = b
	}
	if err != nil {
		return fmt.Errorf("lastgood: rewriting the store: %w", err)
	}
	renamed = true
	if s.f != nil {
		s.f.Close()
	}
	s.f = tmp
	s.state = ns
	s.size = off
	s.digest = bytes.Clone(digest)
	s.needRewrite = false
	if dropped > 0 {
		s.pendingCorrupt += dropped
		s.log.Warn("lastgood: resources of the store did not check out and were dropped", "path", s.path, "dropped", dropped)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("lastgood: the store was rewritten, but syncing its directory failed: %w", err)
	}
	return nil
}
