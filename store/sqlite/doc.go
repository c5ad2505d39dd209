// Package sqlite is the store.Store of one machine: the whole shared store
// in one SQLite file, through modernc.org/sqlite (pure Go, no cgo). Open
// it with Open, or with store/backends.Open("sqlite://PATH").
//
// # Schema
//
// One table per concern, each row a record of the store:
//
//	runs             id, version, config (compact JSON), created (RFC 3339)
//	steps            (run, step) → status, rollouts, dbar, files, summary (JSON); run references runs
//	stat_sets        (run, step) → n, the number of queries PutStats stored
//	query_stats      (run, step, idx) → one rollout.QueryStats; its arrays are blobs of
//	                 little-endian 8-byte values beside their length (-1 for a nil slice)
//	tasks            seq (enqueue order) → run, task_id, the task's fields, state
//	                 (pending, leased, done, dead), attempts, worker, expires_ms
//	dead_letters     seq (order of death) → the task's row, attempts, last worker
//	result_files     id → run, kind (results or draw_results), step or draw, the committed
//	                 length of the append-only file PATH.results/ID.log holding those
//	                 results (see resultfile.go)
//	results          (run, step, task_id) → one rollout's result, as stores of schema
//	                 version 6 and before kept them (read, no longer written)
//	cache            key → value, expires_ms
//	policy_versions  (run, role) → version
//
// Times that expire (leases, cache entries) are unix milliseconds of the
// wall clock of the process that wrote them, so the processes sharing a
// file need clocks that agree to well under a lease.
//
// The schema is versioned in code: migrations are numbered SQL blocks,
// each applied in one transaction that also sets PRAGMA user_version to
// its number; PRAGMA application_id marks the file as an mgrpo store. Open
// applies the migrations a file lacks and then compares the file's tables
// and indexes with the ones the migrations build in an empty database.
// Open refuses, without writing to it, a file that is not a SQLite
// database, another application's database, or a store whose schema
// differs (store.ErrCorrupt), and a store of a newer version
// (ErrNewerSchema): a newer binary may have changed what the rows mean.
//
// # Concurrency
//
// Several goroutines, and several processes, may use one file at once.
// The file is in WAL (write-ahead log) mode: readers read a snapshot and
// never wait for the writer, and the writer never waits for readers; only
// writers exclude each other, one write transaction at a time across every
// process. A write that finds another process's transaction in progress
// waits for it up to the busy timeout (WithBusyTimeout, 10 s by default)
// before failing with SQLITE_BUSY ("database is locked"). Within one
// process every write goes through one connection, so the process's
// writers queue in database/sql (honouring their contexts) instead of
// spinning on the lock; reads use up to four connections beside it.
//
// Every transaction (Claim, Enqueue, PutStats, the migrations) begins
// IMMEDIATE: it takes the write lock before it reads, so two claimers, in
// one process or two, never lease the same task, and no transaction fails
// halfway because another process wrote in between.
//
// A Claim that finds no task waits up to its Wait: it looks again at once
// when this Store enqueues tasks, and every poll interval (WithPollInterval,
// 25 ms by default) for tasks other processes enqueue and for leases that
// expire; its context and Close end the wait. The cache's expired entries
// are misses at once and deleted every sweep interval
// (WithCacheSweepInterval, 10 minutes by default) by every process that
// has the file open.
//
// Commits are synchronous=NORMAL: the file stays consistent after any
// crash, and a process that dies loses nothing it committed, but an
// operating system crash or a power failure may lose the last commits (a
// completion lost that way only runs a rollout again).
//
// # Limits
//
// All processes must be on one machine: SQLite's locks do not work over
// network file systems (NFS, SMB), which may corrupt the file; use
// store/redis across machines. Writes are serialized, so the queue's
// throughput is that of one writer (see docs/benchmarks.md). The WAL
// grows while a reader holds a snapshot and is folded back into the file
// at checkpoints (every ~1,000 pages written, and when the last connection
// closes). Paths with '?' are refused, as are ":memory:" and "file:" URIs
// (they could not be shared). Only PutStep checks that its run exists
// (store.ErrNotFound); the other methods take any run name, as the
// interfaces ask no more.
package sqlite
