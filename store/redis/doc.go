// Package redis is the store of package store on Redis (6.2 or later;
// tested with 7.0), for runs whose workers are spread over several
// machines. It uses github.com/redis/go-redis/v9 and talks to one server
// (a Redis Cluster is not supported by Open, though every script's keys
// share one hash tag).
//
// # Opening
//
// Open takes a URL:
//
//	redis://[user:password@]host:port/db[?prefix=P&option=…]
//	rediss://[user:password@]host:port/db[?prefix=P&option=…]
//
// rediss is Redis over TLS (certificates checked against the host name;
// skip_verify=true turns the check off). The user is an ACL user (Redis 6
// and later); with a password and no user the connection authenticates as
// the default user. prefix starts every key of the store (default
// "mgrpo:"), so that several stores, or a store and other applications,
// can share one database. The other query options are go-redis's
// (ParseURL: dial_timeout, read_timeout, pool_size, max_retries, …). An
// error from Open names the URL without its password.
//
// # Key layout
//
// With prefix P and a run R (path-escaped, so that '{', '}', '/' and '%'
// in a run id cannot change a key), the run's keys share the hash tag {R},
// which keeps every key a script touches in one cluster slot:
//
//	P{R}:run         hash    id, version, config (compact JSON), created (RFC 3339)
//	P{R}:steps       hash    step number → StepRecord JSON
//	P{R}:stats       hash    step number → []QueryStats JSON
//	P{R}:versions    hash    role → policy version (decimal)
//	P{R}:queue       stream  one entry per live task (fields id, task JSON); consumer group "workers"
//	P{R}:tasks       hash    task id → stream entry id of every task ever enqueued
//	P{R}:leases      zset    stream entry id → lease deadline (Unix ms, the server's clock)
//	P{R}:done        set     ids of completed tasks
//	P{R}:dead        stream  dead-lettered tasks in the order they died (id, task, attempts, worker)
//	P{R}:results:N   hash    task id → result JSON, for step N
//	P{R}:files:N     hash    file name → contents, for step N
//	P{R}:draws       hash    draw number → draw record JSON (streamed runs)
//	P{R}:drawresults:N hash  task id → result JSON, for draw N
//	P{R}:lock        hash    token, host, pid, started of the run's coordinator; its TTL is the lock's lease
//	Pcache:K         string  the tool cache's value of key K, with its TTL
//
// # Leases on a stream
//
// Enqueue appends a task to the queue stream once (the tasks hash remembers
// every id, in the same Lua script, so concurrent enqueues of one task add
// one entry). Claim reads never-delivered entries with XREADGROUP: each
// becomes a pending entry of the consumer named after the worker, with a
// delivery count of 1. A lease is a pending entry: its holder is the
// entry's consumer, its attempt the entry's delivery count, its expiry the
// entry's deadline in the leases set. Leases carry their own durations
// (ClaimRequest.Lease, Extend's d), which a pending entry's idle time alone
// cannot express, so the deadline is kept beside it; Extend also resets the
// entry's idle time (XCLAIM … JUSTID), so XPENDING shows the time since the
// last claim or renewal. A lease has expired when its deadline has passed by
// the Redis server's clock: every worker judges expiry by one clock.
//
// Once no new entry is left, Claim takes over expired leases with XCLAIM,
// which moves the entry to the new worker and adds one to its delivery
// count, or, when that count has reached MaxAttempts, dead-letters the task
// instead (XACK, XDEL, appended to the dead stream). Complete acknowledges
// the entry (XACK), deletes it (XDEL) and adds the task to the done set;
// completing a done task is a no-op, and completing a dead-lettered one
// deletes its dead entry and counts it done. Extend checks that the entry is still
// pending for the lease's worker with the lease's delivery count, so a
// reclaimed lease, even one reclaimed by the same worker, is lost. Each of
// these steps is one Lua script, atomic on the server.
//
// A waiting Claim blocks in XREAD on the queue stream for at most half a
// second at a time, and no longer than the next lease deadline, so it wakes
// for a new task, an expired lease, the end of its wait or its context.
// Lease.Expires is the caller's clock when it sent the request plus the
// lease, never later than the server's deadline.
//
// # Errors
//
// A key of the wrong type (WRONGTYPE) and a value that does not parse are
// reported as store.ErrCorrupt, naming the key; the scripts check their
// keys' types before writing anything, so the store never overwrites what
// it could not read.
//
// go-redis sends a command again after a network error (max_retries). A
// Claim whose reply was lost that way leaves leases that nobody holds:
// they expire and are claimed again, one attempt spent. Every other
// method is idempotent, so sending it twice changes nothing.
package redis
