// Package lastgood keeps an engine's last-known-good configuration in a
// file, so that a process that starts while its xDS servers are
// unreachable starts from the configuration it last accepted. A [Store]
// implements [engine.Store]; give it to the engine in engine.Config.Store:
//
//	store, err := lastgood.Open("/var/lib/myapp/xds/lastgood", lastgood.Options{})
//	if err != nil {
//		return err // the directory's permissions, or another process holds the store
//	}
//	defer store.Close()
//	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: reg, Store: store})
//
// # What is kept
//
// For each resource the engine accepted: its authority, the server that
// sent it, its type URL and name, its version, its bytes and when it was
// received, each record checksummed (CRC-32C). The file's header holds
// the format version ([FormatVersion]) and a digest of what makes the
// configuration valid for the process (the engine's: node and
// bootstrap); [Store.Load] with another digest returns nothing, and
// [Store.Apply] with another digest replaces the store's content.
//
// # The file
//
// One file, written two ways. A change set is appended to it as records
// closed by a commit record, and synced (one write and one fsync). When
// appending would take the file past 1.5 times the bytes of the
// resources it keeps, the whole store is written anew instead: to
// PATH.tmp-*, synced, renamed over PATH, and the directory synced. (For
// resources so small that their names, versions and checksums take more
// than a fifth of that, under about 150 bytes, the bound is 1.25 times
// the file's size once rewritten; for a small store, that size and 64
// KiB.) A reader applies a change set only once it has read its
// commit, so a crash at any point leaves the store as it was before a
// change set or as after it: a change set cut short at the end of the
// file is left out (and cut off by the next writer), and a rewrite is
// either not yet renamed or whole. Resources are named by their key
// (authority, type URL, name), so a change replaces or deletes the one
// resource, and none is kept twice once the file is rewritten.
//
// The file is read without the mmap and without trusting any length in
// it: nothing in its content can make this package panic or read out of
// bounds (FuzzCorruptStore). What does not check out is handled by where
// it is. A header that does not check out makes the whole store
// unreadable: a writer moves it aside to PATH.corrupt-TIMESTAMP (mode
// kept) and starts empty, Open does not fail. A resource of the snapshot
// (what the last rewrite wrote) that does not check out is dropped and
// counted in [engine.Loaded].Corrupt, and the file rewritten without it.
// A change set after it that does not check out is treated as one cut
// short: it and any after it are left out, so the store loads as it was
// before it, a state it really had, never a mix.
//
// # Why not bbolt
//
// go.etcd.io/bbolt is the usual embedded store, and crash-safe. Measured
// on this project's machine (ext4, 2 cores) with a 10,000-Cluster store,
// it misses two of the targets this store has, and needs guarding for
// the third:
//
//   - Cost: a transaction of 1,000 changed resources took 3.6 ms of CPU
//     (37-byte Clusters) and 8.4 ms (460-byte ones), against 1.4 ms of
//     CPU for the engine to take in the response itself; its B+tree
//     copies every page a change touches, and 1,000 changes spread over
//     10,000 resources touch most pages. Appending the same change set
//     here is one write and one fsync (BenchmarkApply), and the rewrite
//     every few change sets copies the records kept as they are.
//   - Disk: a copy-on-write file never shrinks and needs room for the old
//     and new pages of a transaction: after 20 change sets it was 2.0 to
//     2.6 times the bytes kept (fill percent 100 %), 11 times with the
//     default fill percent, so the 1.5 times bound would need compacting
//     into a new file anyway.
//   - Integrity: bbolt reads the file through mmap and trusts its page
//     pointers: a corrupt page can panic, or fault outside the file
//     (which Go cannot recover from without debug.SetPanicOnFault on every
//     goroutine that reads).
//
// What bbolt offers besides (transactions over many keys, a B+tree for
// lookups) this store does not need: the engine writes change sets and
// reads everything once, at start.
//
// # Files and permissions
//
// The store's directory is created 0700 if it is missing, and its files
// 0600. Open refuses, with an error that says what to run, a directory
// or an existing store file that others may use (permissions beyond 0700
// and 0600, or another user's: others could read the configuration, or
// replace it), and a store path that is not a regular file. Besides PATH
// the directory holds PATH.lock (the lock, an empty file never removed),
// PATH.tmp-* during a rewrite (removed by the next Open if a crash left
// it) and PATH.corrupt-* when a store was moved aside (left for the user
// to remove).
//
// # Locking
//
// A writer holds an exclusive flock(2) on PATH.lock for the life of the
// Store; a second writer, in this process or another, waits up to
// Options.LockTimeout (default 1 s) and fails with [ErrLocked], naming
// the path. The kernel releases the lock when the process dies. A reader
// (Options.ReadOnly, as xdsctl store uses) takes no lock: the writer only
// appends whole change sets and replaces the file by rename, so a read
// always sees a whole state, and never blocks the engine. Writing needs
// flock and durable renames: it works on Linux, the BSDs and macOS;
// elsewhere only ReadOnly does.
//
// # Costs
//
// Measured by the benchmarks (go test ./lastgood -run '^$' -bench .
// -benchmem), figures in the package's report and BENCHMARKS.md: Apply of
// 1,000 changed Clusters, Load of 10,000, and the file's size over the
// bytes kept (BenchmarkDiskSize).
package lastgood
