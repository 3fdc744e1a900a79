package lastgood

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// DefaultLockTimeout is how long Open waits for another process to
// release a store, unless Options say otherwise.
const DefaultLockTimeout = time.Second

// lockRetry is how often Open tries the lock again while it waits.
const lockRetry = 10 * time.Millisecond

// Options configure Open. The zero value is a writer that waits
// [DefaultLockTimeout] for the lock and logs nothing.
type Options struct {
	// LockTimeout is how long Open waits when another process (or another
	// Store of this process) holds the store: 0 means
	// [DefaultLockTimeout], a negative value not at all. Open then fails
	// with [ErrLocked].
	LockTimeout time.Duration
	// ReadOnly opens the store to read it, as a tool does: no lock is
	// taken, so a running engine neither blocks nor is blocked; nothing is
	// created, repaired or moved aside; Apply fails with [ErrReadOnly].
	// Each Load reads the file as it is then, which is always a whole
	// state: the writer appends change sets and replaces the file by
	// rename, and a change set still being written is left out.
	ReadOnly bool
	// Logger receives a warning when the store is moved aside or
	// resources are dropped because they did not check out; nil discards.
	Logger *slog.Logger
}

var (
	// ErrLocked is returned by Open when another process, or another Store
	// of this process, holds the store.
	ErrLocked = errors.New("lastgood: the store is in use by another process")
	// ErrReadOnly is returned by Apply on a store opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("lastgood: the store is open read-only")
	// ErrClosed is returned by the methods of a closed Store.
	ErrClosed = errors.New("lastgood: the store is closed")
	// ErrCorrupt is returned when a store opened read-only, or read by
	// Load, has a header that does not check out. A writer never returns
	// it from Open: it moves such a store aside and starts empty.
	ErrCorrupt = errors.New("lastgood: the store cannot be read")
)

// Store is a last-known-good configuration in one file. It implements
// [storage.Store]; its methods may be called from any goroutine.
type Store struct {
	path     string
	readOnly bool
	log      *slog.Logger

	mu     sync.Mutex
	closed bool
	lock   *os.File // held for the Store's life (writers)
	f      *os.File // the store file (writers)
	digest []byte
	// size is how many bytes of the file hold whole change sets: the
	// next one is written there.
	size int64
	state
	// needRewrite makes the next Apply write the whole file anew: after
	// a write that failed, or corruption found after Open.
	needRewrite bool
	// opened is what Open read, for the first Load to use instead of
	// reading the file again; Apply and Close drop it.
	opened *scanned
	// pendingCorrupt counts resources dropped (at Open, or copying them
	// in a rewrite) that no Load has reported yet.
	pendingCorrupt int
	movedAside     string
	// epoch counts rewrites, to mark the slots a rewrite replaces.
	epoch uint64
	// Working buffers, kept from one change set to the next.
	buf   []byte
	slots []*slot
	locs  []at
}

var _ storage.Store = (*Store)(nil)

// Open opens the store at path, creating it (and its directory, 0700) if
// it does not exist.
//
// Open fails only for what the user must fix: a directory or file that
// others may use (wider than 0700 and 0600, or another user's), a store
// another process holds (after Options.LockTimeout, [ErrLocked]), a file
// system error. A store that cannot be read is moved aside to
// PATH.corrupt-TIMESTAMP and replaced by an empty one ([Store.MovedAside]
// names it); one with a committed change set that does not check out is
// moved aside too, and replaced by what it held before that change set;
// resources and changes so lost are counted in the next Load's Corrupt.
// A change set a crash cut short is cut off, and neither counted nor
// moved aside. Besides PATH, the directory holds PATH.lock, which is
// never removed, and, during a rewrite, PATH.tmp-*.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("lastgood: Open: the path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("lastgood: Open: %w", err)
	}
	s := &Store{path: abs, readOnly: opts.ReadOnly, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.ReadOnly {
		if err := s.openReadOnly(); err != nil {
			return nil, err
		}
		return s, nil
	}
	if !canWrite {
		return nil, fmt.Errorf("lastgood: writing a store is not supported on %s (Options.ReadOnly is): %w", runtime.GOOS, errors.ErrUnsupported)
	}
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	if err := ensureDir(filepath.Dir(abs)); err != nil {
		return nil, err
	}
	if s.lock, err = acquireLock(abs, timeout); err != nil {
		return nil, err
	}
	if err := removeTemps(abs); err != nil {
		err = fmt.Errorf("lastgood: removing temporary files: %w", err)
		return nil, errors.Join(err, s.lock.Close())
	}
	if err := s.openFile(); err != nil {
		return nil, errors.Join(err, s.closeFiles())
	}
	return s, nil
}

func acquireLock(path string, timeout time.Duration) (*os.File, error) {
	lockPath := path + lockSuffix
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("lastgood: opening the lock file: %w", err)
	}
	deadline := time.Now().Add(max(timeout, 0))
	for {
		ok, err := tryLock(f)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("lastgood: locking %s: %w", lockPath, err), f.Close())
		}
		if ok {
			return f, nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			f.Close()
			return nil, fmt.Errorf("%w: %s (its lock %s is held; waited %v): stop the other process, or give this one another path",
				ErrLocked, path, lockPath, max(timeout, 0))
		}
		time.Sleep(min(wait, lockRetry))
	}
}

// openFile reads the store file, or creates it.
func (s *Store) openFile() error {
	fi, err := os.Lstat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s.rewrite(nil, false, nil)
	}
	if err != nil {
		return fmt.Errorf("lastgood: %w", err)
	}
	if err := checkFile(s.path, fi); err != nil {
		return err
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("lastgood: reading the store: %w", err)
	}
	sc, err := scan(data)
	if err != nil {
		moved, merr := moveAside(s.path, time.Now())
		if merr != nil {
			return merr
		}
		s.movedAside = moved
		s.log.Warn("lastgood: the store could not be read; it was moved aside and the store starts empty",
			"path", s.path, "moved_to", moved, "reason", err.Error())
		return s.rewrite(nil, false, nil)
	}
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("lastgood: opening the store: %w", err)
	}
	s.f = f
	s.adopt(sc)
	switch {
	case sc.broken != nil:
		if err := s.setAside(sc); err != nil {
			return err
		}
		s.pendingCorrupt += sc.corrupt + sc.broken.lost
	case sc.damaged:
		// Rewrite now, so that what was dropped is gone from the file and
		// the next change set does not follow a damaged snapshot. Until
		// then, each Load finds (and counts) what was dropped again.
		s.log.Warn("lastgood: resources of the store did not check out and were dropped",
			"path", s.path, "dropped", sc.corrupt)
		if err := s.rewrite(s.digest, true, nil); err != nil {
			s.needRewrite = true
			s.log.Warn("lastgood: rewriting the store failed; the next change set will rewrite it", "path", s.path, "error", err.Error())
		} else {
			s.pendingCorrupt += sc.corrupt
		}
	case sc.end < int64(len(data)):
		// A change set was being written when the last writer stopped.
		err := s.f.Truncate(sc.end)
		if err == nil {
			err = s.f.Sync()
		}
		if err != nil {
			s.needRewrite = true
		}
		s.opened = sc
	default:
		s.opened = sc
	}
	return nil
}

func (s *Store) openReadOnly() error {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("lastgood: reading the store: %w", err)
	}
	h, _, err := parseHeader(data)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, err)
	}
	s.digest = h.digest
	return nil
}

// Load returns the resources the store holds for digest, in no
// particular order: none when it was written for another digest. A
// resource that does not check out is left out and counted in Corrupt,
// as are those dropped since the last Load (at Open, or while rewriting
// the file), and the changes of a committed change set that does not
// check out and of those after it: Load then returns the state before
// it, and a writer moves the file aside and goes on from that state, as
// Open does. Their Raw bytes are the caller's. The first Load after Open
// uses what Open read, not reading the file again.
func (s *Store) Load(digest []byte) (storage.Loaded, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.Loaded{}, ErrClosed
	}
	loaded := storage.Loaded{Corrupt: s.pendingCorrupt}
	s.pendingCorrupt = 0
	sc := s.opened
	s.opened = nil
	if sc == nil {
		data, err := s.read()
		if err != nil {
			return loaded, fmt.Errorf("lastgood: reading the store: %w", err)
		}
		if sc, err = scan(data); err != nil {
			s.needRewrite = !s.readOnly
			return loaded, fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, err)
		}
	}
	if sc.broken != nil && !s.readOnly {
		// The file changed under the writer since it wrote it: it goes
		// on from what the file holds up to the change set damaged, as
		// the next Open would.
		s.adopt(sc)
		if err := s.setAside(sc); err != nil {
			s.needRewrite = true
			s.log.Warn("lastgood: moving the damaged store aside failed; the next change set will rewrite it", "path", s.path, "error", err.Error())
		}
	}
	if !bytes.Equal(sc.header.digest, digest) {
		return loaded, nil
	}
	if sc.damaged && !s.readOnly {
		s.needRewrite = true
	}
	loaded.Corrupt += sc.corrupt
	if sc.broken != nil {
		loaded.Corrupt += sc.broken.lost
	}
	loaded.Resources = resources(sc)
	return loaded, nil
}

// setAside keeps a store whose committed change set does not check out
// as it was found, at PATH.corrupt-TIMESTAMP, and writes in its place
// what the writer adopted from it: the state before that change set.
func (s *Store) setAside(sc *scanned) error {
	moved, err := moveAside(s.path, time.Now())
	if err != nil {
		return err
	}
	if err := s.rewrite(s.digest, true, nil); err != nil {
		// Put it back, so that the next Open finds it and tries again;
		// what it holds is not lost to an empty store.
		if rerr := os.Rename(moved, s.path); rerr != nil {
			err = errors.Join(err, fmt.Errorf("lastgood: the damaged store stays at %s: %w", moved, rerr))
		}
		return err
	}
	s.movedAside = moved
	s.log.Warn("lastgood: a committed change set of the store did not check out; the store was moved aside and goes on from the state before it",
		"path", s.path, "moved_to", moved, "offset", sc.broken.off, "reason", sc.broken.why, "changes_lost", sc.broken.lost)
	return nil
}

// read returns the file's bytes: for a writer, those that hold whole
// change sets.
func (s *Store) read() ([]byte, error) {
	if s.readOnly {
		return os.ReadFile(s.path)
	}
	data := make([]byte, s.size)
	_, err := s.f.ReadAt(data, 0)
	return data, err
}

// resources copies what a scan found out of the file's bytes, the raw
// bytes into one allocation.
func resources(sc *scanned) []storage.Resource {
	total := 0
	for _, e := range sc.entries {
		total += len(e.put.raw)
	}
	arena := make([]byte, 0, total)
	out := make([]storage.Resource, 0, len(sc.entries))
	for k, e := range sc.entries {
		start := len(arena)
		arena = append(arena, e.put.raw...)
		out = append(out, storage.Resource{
			Authority: k.authority,
			Server:    sc.sources[e.put.source].server,
			TypeURL:   k.typeURL,
			Name:      k.name,
			Version:   e.put.version,
			Raw:       arena[start:len(arena):len(arena)],
			Received:  timeFromNanos(e.put.received),
			Expires:   timeFromNanos(e.put.expires),
		})
	}
	return out
}

// Digest returns the digest the store was last written for (read when a
// read-only store was opened); nil for a store never written.
func (s *Store) Digest() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.digest)
}

// MovedAside returns where Open moved a store it could not read, or "".
func (s *Store) MovedAside() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.movedAside
}

// Close releases the store and its lock. Calling it again does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.opened = nil
	return s.closeFiles()
}

func (s *Store) closeFiles() error {
	var err error
	if s.f != nil {
		err = s.f.Close()
		s.f = nil
	}
	if s.lock != nil {
		// Closing the lock file releases the lock.
		err = errors.Join(err, s.lock.Close())
		s.lock = nil
	}
	return err
}

// timeFromNanos and nanosFromTime keep a time as Unix nanoseconds; the
// zero time (and any time too far from 1970 to be kept so) as 0.
func timeFromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

var (
	minNanosTime = time.Unix(0, -1<<63)
	maxNanosTime = time.Unix(0, 1<<63-1)
)

func nanosFromTime(t time.Time) int64 {
	if t.Before(minNanosTime) || t.After(maxNanosTime) {
		return 0
	}
	return t.UnixNano()
}
