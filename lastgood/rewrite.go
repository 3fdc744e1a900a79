package lastgood

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// rewrite writes the whole store anew, for digest: the resources kept
// (when keep is set) that changes do not name, then those changes put.
// It writes a temporary file beside the store, syncs it and renames it
// over the store, then syncs the directory. The Store's state changes
// only once the rename is done.
func (s *Store) rewrite(digest []byte, keep bool, changes []storage.Change) error {
	last := make(map[key]int, len(changes)) // the change that counts, per key
	for i := range changes {
		c := &changes[i]
		last[key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}] = i
	}
	ids := map[source]uint64{}
	next := uint64(0)
	var kept []*slot
	var oldFile []byte
	if keep {
		maps.Copy(ids, s.sourceIDs)
		next = s.nextSource
		s.epoch++
		for k := range last {
			if sl := s.index.get(k); sl != nil {
				sl.mark = s.epoch
			}
		}
		kept = make([]*slot, 0, s.index.len())
		for sl := range s.index.all() {
			if sl.mark != s.epoch {
				kept = append(kept, sl)
			}
		}
		if len(kept) > 0 {
			// The records kept are copied from the file as it is, read
			// whole: within its bound, not much more than what is kept.
			oldFile = make([]byte, s.size)
			if _, err := s.f.ReadAt(oldFile, 0); err != nil {
				return fmt.Errorf("lastgood: rewriting the store: reading it: %w", err)
			}
		}
	}
	used := map[uint64]source{}
	for _, sl := range kept {
		used[sl.source] = s.sources[sl.source].source
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
	w := bufio.NewWriterSize(tmp, int(min(256<<10, max(4<<10, s.compacted()))))
	off := int64(headerLen(digest))
	w.Write(make([]byte, off)) // the header goes here once known
	b := s.buf[:0]
	sizes := make([]int, 0, len(used)+len(kept)+len(changes)) // of the records, for the index
	for _, id := range slices.Sorted(maps.Keys(used)) {
		b = appendSource(b[:0], id, used[id])
		w.Write(b)
		off += int64(len(b))
		sizes = append(sizes, len(b))
	}
	newOffs := make([]int64, len(kept)) // where each kept record goes; -1 if dropped
	dropped := 0
	for i, sl := range kept {
		rec := oldFile[sl.off : sl.off+int64(sl.size)]
		if r, ok, checked := readRecord(rec, 0); !ok || !checked || r.size != len(rec) {
			newOffs[i] = -1 // changed on disk since it was written
			dropped++
			continue
		}
		w.Write(rec)
		newOffs[i] = off
		off += int64(len(rec))
		sizes = append(sizes, len(rec))
	}
	putLocs := make([]at, len(changes)) // where each put goes
	for i := range changes {
		c := &changes[i]
		if c.Delete || last[key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}] != i {
			continue
		}
		b = appendPut(b[:0], put{source: putIDs[i], name: c.Name, version: c.Version, received: nanosFromTime(c.Received), expires: nanosFromTime(c.Expires), raw: c.Raw})
		w.Write(b)
		putLocs[i] = at{off: off, size: len(b), raw: len(c.Raw)}
		off += int64(len(b))
		sizes = append(sizes, len(b))
	}
	puts := len(sizes) - len(used)
	indexOff := off
	b = appendIndex(b[:0], sizes)
	w.Write(b)
	off += int64(len(b))
	err = w.Flush()
	if err == nil {
		b = appendHeader(b[:0], header{digest: digest, snapshotEnd: off, indexOff: indexOff, snapshotPuts: uint32(puts)})
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

	// The file is the store now: the state follows it.
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.size, s.digest, s.needRewrite = tmp, off, bytes.Clone(digest), false
	if !keep {
		s.index = newIndex()
	}
	s.sources, s.sourceIDs = map[uint64]*sourceInfo{}, map[source]uint64{}
	for id, src := range used {
		s.addSource(id, src)
	}
	s.nextSource = max(s.nextSource, next)
	for i, sl := range kept {
		if newOffs[i] < 0 {
			s.index.del(sl.k)
		} else {
			sl.off = newOffs[i]
		}
	}
	for i := range changes {
		c := &changes[i]
		k := key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}
		switch {
		case last[k] != i:
		case c.Delete:
			if sl := s.index.get(k); sl != nil {
				s.index.del(k)
				sl.gone = true
			}
		default:
			sl := s.index.get(k)
			if sl == nil {
				sl = &slot{k: k}
				s.index.add(sl)
			}
			sl.off, sl.size, sl.raw, sl.source = putLocs[i].off, putLocs[i].size, putLocs[i].raw, putIDs[i]
		}
	}
	s.recount(digest)
	if dropped > 0 {
		s.pendingCorrupt += dropped
		s.log.Warn("lastgood: resources of the store did not check out and were dropped", "path", s.path, "dropped", dropped)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("lastgood: the store was rewritten, but syncing its directory failed: %w", err)
	}
	return nil
}
