// Package lastgood keeps an engine's last-known-good configuration in a
// file, so that a process that starts while its xDS servers are
// unreachable starts from the configuration it last accepted. A [Store]
// implements [storage.Store]; give it to the engine in engine.Config.Store:
//
//	store, err := lastgood.Open("/var/lib/myapp/xds/lastgood", lastgood.Options{})
//	if err != nil {
//		return err // the directory's permissions, or another process holds the store
//	}
//	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: reg, Store: store})
//
// The engine closes the store when it closes (Close may be called again).
//
// xdsctl lists a store without a server: xdsctl store PATH.
//
// # What is kept
//
// For each resource the engine accepted: its authority, the server that
// sent it, its type URL and name, its version, its bytes and when it was
// received, in a record of its own, checksummed (CRC-32C). The file's
// header holds the format version ([FormatVersion]) and the digest the
// engine gives (of the node and the bootstrap): [Store.Load] with another
// digest returns nothing, and [Store.Apply] with another digest replaces
// the store's content.
//
// # The file
//
// One file, written two ways. A change set is appended as a begin
// record, which states the change set's length and number of changes,
// its records, and a commit record that states them again, then synced:
// one write, one fsync. When appending would take the file past 1.5
// times the bytes of the resources it keeps, the store is written anew
// instead, as a snapshot with an index of its records: to PATH.tmp-*,
// synced, renamed over PATH, and the directory synced. (When the resources are so small that their names, versions
// and the 40 bytes or so of each record come to more than a fifth of
// their size, as for resources of less than about 250 bytes with short
// names, the bound is 1.25 times the size the file has once rewritten;
// and for a small store, that size and 64 KiB.)
//
// A reader applies a change set only once it has read its commit, so a
// crash at any moment leaves the store as before a change set or as
// after it: a change set cut short at the end of the file is left out
// (and cut off by the next writer), and a rewrite is either not yet
// renamed or whole. A change set that fails to be written is cut off the
// file; the next one writes the store anew. Resources are named by their
// key (authority, type URL, name): a change replaces or deletes the one
// resource, and a deleted one is gone from the file at the next rewrite.
//
// The format is version 2 ([FormatVersion]). Version 1, whose change sets
// had no begin record, could not tell one cut short from one damaged
// (see Corruption); a file of version 1 is moved aside as unreadable, and
// the store starts empty.
//
// # Corruption
//
// The file is read through ordinary reads, checking every length against
// what is there: nothing in it can make this package panic or read out
// of bounds (FuzzCorruptStore). A header that does not check out makes
// the store unreadable: a writer moves it aside to PATH.corrupt-TIMESTAMP
// (its mode kept; [Store.MovedAside]), logs a warning and starts empty;
// Open does not fail. A record of the snapshot that does not check out
// costs only itself, found through the index: the resource is left out,
// counted in [storage.Loaded].Corrupt, and the file rewritten without it.
//
// A change set cut short by a crash is told from a committed one that
// was damaged by where its commit record ends, which its begin record (of
// a fixed length) states. A writer appends a change set in one write, so
// a crash leaves a prefix of its bytes: the file reaches the end of the
// commit record only if every byte before it was written. A change set
// whose begin record, or whose end, is past the end of the file, or in
// place of which the file holds only zeros (space a file system added
// and never wrote), was never committed: it is left out without a word.
// One that the file holds to its end was committed, and if anything in it
// does not check out (its begin record, a record, its commit record, the
// number of its changes, a source it names that was lost with the
// snapshot), that is corruption: it and the change sets after it are
// left out and counted in Corrupt (their changes, as their begin records
// state them; one for a change set whose begin record does not check
// out); a writer moves the file aside as above, logs a warning, and
// writes anew what the file held before that change set, which Load
// returns and the store goes on from. A reader ([Options].ReadOnly)
// reports the same and moves nothing.
//
// So Load never returns an older state than the last change set
// committed without saying so: it returns that state, or, with Corrupt
// above 0, the state an earlier commit left, less any resource that did
// not check out (TestStoreMatchesModel); every resource it returns is
// byte for byte as it was written. Two limits follow from the rule. A
// file system that, after a power loss, keeps the length of a change set
// being written but not all its bytes makes it look damaged: it is
// reported, and nothing acknowledged is lost. A file cut short by
// anything but a crash loses its last change sets unreported, as a crash
// would.
//
// # Why not bbolt
//
// go.etcd.io/bbolt is the usual embedded store, and crash-safe. Measured
// on this project's machine with a store of 10,000 Clusters and
// transactions of 1,000 changed ones (the figures are in BENCHMARKS.md),
// it missed two of this store's targets and needed guarding for the third:
//
//   - Cost: a transaction cost several times what the engine spends to
//     take in the response itself: its B+tree copies every page a change
//     touches, and 1,000 changes spread over 10,000 resources touch most
//     of them. Here a change set is appended, and a rewrite every few
//     change sets copies the records kept as they are (BenchmarkApply).
//   - Disk: a copy-on-write file never shrinks and needs room for a
//     transaction's old and new pages: it grew past the 1.5 times the
//     bytes kept that this store allows, even with pages filled whole;
//     keeping it there needs compacting into a new file, which is what
//     this store does anyway (BenchmarkDiskSize).
//   - Integrity: bbolt reads the file through mmap and trusts its page
//     pointers: a corrupt page can panic, or fault outside the file,
//     which Go recovers from only with debug.SetPanicOnFault on every
//     goroutine that reads, some of them bbolt's own.
//
// What bbolt offers besides, transactions over many keys and lookups by
// key, the engine does not need: it writes change sets, and reads the
// whole store once, at start.
//
// # Files and permissions
//
// The store's directory is created 0700 if it is missing, and its files
// 0600. Open refuses, with an error that says what to run, a directory
// others can write to, a store file others can read or write, either of
// them another user's (others could read the configuration, or replace
// it), and a store path that is not a regular file. A directory others
// can list (0755) is accepted, as ssh's StrictModes accepts a home
// directory: the files' names are no secret. Besides PATH the directory
// holds PATH.lock (the lock, an empty file, never removed), PATH.tmp-*
// during a rewrite (removed by the next Open if a crash left one) and
// PATH.corrupt-* for stores moved aside (left for the user to remove).
//
// # Locking
//
// A writer holds an exclusive flock(2) on PATH.lock for the life of the
// Store. A second writer, in this process or another, waits up to
// Options.LockTimeout (default 1 s) and fails with [ErrLocked], naming
// the path; the kernel releases the lock when a process dies. A reader
// (Options.ReadOnly, as xdsctl store opens it) takes no lock and never
// waits: the writer only appends whole change sets and replaces the file
// by rename, so a read always sees a whole state. Writing needs flock and
// durable renames: it works on Linux, the BSDs and macOS; elsewhere only
// ReadOnly does.
//
// # Costs
//
// The package's benchmarks (go test ./lastgood -run '^$' -bench .
// -benchmem) measure a store of 10,000 Clusters changed 1,000 at a time:
// the CPU of an Apply, the kernel's work for write and fsync included,
// with and without the rewrites that come every few change sets
// (BenchmarkApply, BenchmarkApplyAll); Open and Load of the 10,000
// (BenchmarkOpenLoad, BenchmarkLoad); and the file's size over the bytes
// it keeps (BenchmarkDiskSize). Their figures are in BENCHMARKS.md. A
// writer keeps an index of the resources' keys in memory; a rewrite reads
// the file whole, and Load holds it while it reads.
package lastgood
