package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// lockRunScript: KEYS lock; ARGV token, host, pid, started, lease in ms.
// Replies {1} when the lock is taken or renewed, {0, host, pid, started,
// ms left, token} when another owner holds it. A stale lock has expired away (its
// TTL is the lease, by the server's clock), so it is simply taken.
var lockRunScript = script(`'hash'`, `
local cur = redis.call('HGET', KEYS[1], 'token')
if cur and cur ~= ARGV[1] then
  local h = redis.call('HMGET', KEYS[1], 'host', 'pid', 'started')
  return {0, h[1] or '', h[2] or '', h[3] or '', redis.call('PTTL', KEYS[1]), cur}
end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'host', ARGV[2], 'pid', ARGV[3], 'started', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1}
`)

// unlockRunScript: KEYS lock; ARGV token. Deletes the lock when the token
// holds it.
var unlockRunScript = script(`'hash'`, `
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// LockRun takes or renews run's lock for o (see store.Locks). The lock is
// a hash whose TTL is the lease, so it goes stale by the server's clock.
func (s *Store) LockRun(ctx context.Context, run string, o store.Owner, lease time.Duration) (store.Owner, error) {
	if lease <= 0 {
		return o, fmt.Errorf("lock run %s: lease %v ≤ 0", run, lease)
	}
	key := s.keys(run).lock
	sent := time.Now()
	reply, err := lockRunScript.Run(ctx, s.client, []string{key}, o.Token, o.Host, strconv.Itoa(o.PID),
		o.Started.UTC().Format(time.RFC3339Nano), millis(lease)).Slice()
	if err != nil {
		return o, fmt.Errorf("lock run %s: %w", run, keyErr(key, err))
	}
	if len(reply) == 1 {
		o.Expires = sent.Add(lease)
		return o, nil
	}
	if len(reply) != 6 {
		return o, fmt.Errorf("lock run %s: %w", run, corrupt(key, fmt.Errorf("lock script replied %v", reply)))
	}
	str := func(v any) string { s, _ := v.(string); return s }
	held := store.Owner{Host: str(reply[1]), Token: str(reply[5])}
	held.PID, _ = strconv.Atoi(str(reply[2]))
	held.Started, _ = time.Parse(time.RFC3339Nano, str(reply[3]))
	left, _ := reply[4].(int64)
	held.Expires = sent.Add(time.Duration(max(left, 0)) * time.Millisecond)
	return o, fmt.Errorf("lock run %s: %w", run, &store.LockedError{Run: run, Owner: held})
}

// UnlockRun deletes run's lock when o holds it.
func (s *Store) UnlockRun(ctx context.Context, run string, o store.Owner) error {
	key := s.keys(run).lock
	if err := unlockRunScript.Run(ctx, s.client, []string{key}, o.Token).Err(); err != nil {
		return fmt.Errorf("unlock run %s: %w", run, keyErr(key, err))
	}
	return nil
}
