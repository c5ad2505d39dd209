package redis

import goredis "github.com/redis/go-redis/v9"

// The Lua scripts of the store. Each runs atomically on the server. Every
// script first checks the types of the keys it touches (KEYS[i] must be
// of the type in ARGV's type list or absent) so that it fails before
// writing anything, and replies with an error whose first word is one of
// the codes mapErr knows.

// luaPrelude defines the helpers every script uses.
const luaPrelude = `
local function wrongtype(types)
  for i, want in ipairs(types) do
    local t = redis.call('TYPE', KEYS[i])['ok']
    if t ~= 'none' and t ~= want then
      return 'WRONGTYPE key ' .. KEYS[i] .. ' holds a ' .. t .. ', not a ' .. want
    end
  end
  return nil
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function field(kv, name)
  for i = 1, #kv, 2 do
    if kv[i] == name then return kv[i + 1] end
  end
  return ''
end
`

func script(types, body string) *goredis.Script {
	return goredis.NewScript(luaPrelude + "local bad = wrongtype({" + types + "})\n" +
		"if bad then return redis.error_reply(bad) end\n" + body)
}

// createRunScript: KEYS run; ARGV id, version, config, created. Replies 1
// when created, 0 when the same run existed.
var createRunScript = script(`'hash'`, `
if redis.call('EXISTS', KEYS[1]) == 1 then
  local v = redis.call('HMGET', KEYS[1], 'version', 'config')
  if not v[1] or not v[2] then
    return redis.error_reply('CORRUPT key ' .. KEYS[1] .. ' has no version or config')
  end
  if v[1] == ARGV[2] and v[2] == ARGV[3] then return 0 end
  return redis.error_reply('CONFLICT run ' .. ARGV[1] .. ' exists with version ' .. v[1] .. ' and another configuration')
end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'version', ARGV[2], 'config', ARGV[3], 'created', ARGV[4])
return 1
`)

// putStepScript: KEYS run, steps; ARGV run id, step, record.
var putStepScript = script(`'hash', 'hash'`, `
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('NOTFOUND run ' .. ARGV[1])
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
`)

// setVersionScript: KEYS versions; ARGV role, version (a positive decimal
// without leading zeros). Replies 1 when stored, 0 when not newer.
var setVersionScript = script(`'hash'`, `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  if not string.match(cur, '^[1-9]%d*$') then
    return redis.error_reply('CORRUPT key ' .. KEYS[1] .. ' field ' .. ARGV[1] .. ' is not a version')
  end
  if #cur > #ARGV[2] or (#cur == #ARGV[2] and cur >= ARGV[2]) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// setCacheScript: KEYS entry; ARGV value, ttl in ms.
var setCacheScript = script(`'string'`, `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// deleteHashScript: KEYS key; deletes it when it is a hash (or absent).
var deleteHashScript = script(`'hash'`, `
return redis.call('UNLINK', KEYS[1])
`)

// enqueueScript: KEYS queue, tasks; ARGV group, then task id and task JSON
// pairs. Replies with the number of tasks added.
var enqueueScript = script(`'stream', 'hash'`, `
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
end
local added = 0
for i = 2, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then
    local id = redis.call('XADD', KEYS[1], '*', 'id', ARGV[i], 'task', ARGV[i + 1])
    redis.call('HSET', KEYS[2], ARGV[i], id)
    added = added + 1
  end
end
return added
`)

// queueLost is the Lua check, on KEYS[1] a queue stream and KEYS[n] its
// tasks hash, that a queue which was given tasks still has its stream and
// its consumer group ARGV[1]; it replies QUEUELOST otherwise.
func queueLost(tasksKey string) string {
	return `
if redis.call('HLEN', ` + tasksKey + `) > 0 then
  if redis.call('EXISTS', KEYS[1]) == 0 then
    return redis.error_reply('QUEUELOST stream ' .. KEYS[1] .. ' is gone, while ' .. redis.call('HLEN', ` + tasksKey + `) .. ' tasks were enqueued')
  end
  local found = false
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if field(g, 'name') == ARGV[1] then found = true end
  end
  if not found then
    return redis.error_reply('QUEUELOST consumer group ' .. ARGV[1] .. ' of stream ' .. KEYS[1] .. ' is gone')
  end
end
`
}

// claimScript: KEYS queue, leases, dead, tasks; ARGV group, worker, max,
// lease ms, max attempts (0: no limit). Replies {leases, last entry id, ms
// to the next lease deadline or -1}, each lease {entry id, task JSON,
// attempt}.
var claimScript = script(`'stream', 'zset', 'stream', 'hash'`, queueLost(`KEYS[4]`)+`
local q, leases, dead = KEYS[1], KEYS[2], KEYS[3]
local group, worker = ARGV[1], ARGV[2]
local max, lease, maxAttempts = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if redis.call('EXISTS', q) == 0 then return {{}, '0-0', -1} end
local now = now_ms()
local out = {}
local fresh = redis.call('XREADGROUP', 'GROUP', group, worker, 'COUNT', max, 'STREAMS', q, '>')
if fresh then
  for _, e in ipairs(fresh[1][2]) do
    redis.call('ZADD', leases, now + lease, e[1])
    out[#out + 1] = {e[1], field(e[2], 'task'), 1}
  end
end
while #out < max do
  local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, max - #out)
  if #expired == 0 then break end
  for _, id in ipairs(expired) do
    local p = redis.call('XPENDING', q, group, id, id, 1)
    if #p == 0 then
      -- Not pending any more: nothing to lease.
      redis.call('ZREM', leases, id)
    elseif maxAttempts > 0 and p[1][4] >= maxAttempts then
      local e = redis.call('XRANGE', q, id, id)
      local kv = {}
      if e[1] then kv = e[1][2] end
      redis.call('XADD', dead, '*', 'id', field(kv, 'id'), 'task', field(kv, 'task'),
        'attempts', p[1][4], 'worker', p[1][2])
      redis.call('XACK', q, group, id)
      redis.call('XDEL', q, id)
      redis.call('ZREM', leases, id)
    else
      local c = redis.call('XCLAIM', q, group, worker, 0, id)
      if c[1] then
        redis.call('ZADD', leases, now + lease, id)
        out[#out + 1] = {id, field(c[1][2], 'task'), p[1][4] + 1}
      else
        -- The entry is gone from the stream; XCLAIM dropped it.
        redis.call('XACK', q, group, id)
        redis.call('ZREM', leases, id)
      end
    end
  end
end
local last = redis.call('XREVRANGE', q, '+', '-', 'COUNT', 1)
local lastID = '0-0'
if last[1] then lastID = last[1][1] end
local nextWait = -1
local first = redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')
if first[2] then nextWait = math.max(tonumber(first[2]) - now, 0) end
return {out, lastID, nextWait}
`)

// extendScript: KEYS queue, leases; ARGV group, entry id, worker, attempt,
// ms. Replies 1.
var extendScript = script(`'stream', 'zset'`, `
local p = {}
if redis.call('EXISTS', KEYS[1]) == 1 then
  p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
end
if #p == 0 then
  return redis.error_reply('LEASELOST the task was completed or dead-lettered')
end
if p[1][2] ~= ARGV[3] or p[1][4] ~= tonumber(ARGV[4]) then
  return redis.error_reply('LEASELOST the task is held by ' .. p[1][2] .. ' (attempt ' .. p[1][4] .. ')')
end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[5]), ARGV[2])
return 1
`)

// completeScript: KEYS queue, leases, done, dead; ARGV group, entry id,
// task id. Replies 1 when completed, 0 when it was done already. A
// dead-lettered task completed by a late holder leaves the dead letters
// (scanned: they are few) and counts as done.
var completeScript = script(`'stream', 'zset', 'set', 'stream'`, `
if redis.call('SISMEMBER', KEYS[3], ARGV[3]) == 1 then return 0 end
local e = {}
if redis.call('EXISTS', KEYS[1]) == 1 then
  e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
end
if not e[1] or field(e[1][2], 'id') ~= ARGV[3] then
  for _, d in ipairs(redis.call('XRANGE', KEYS[4], '-', '+')) do
    if field(d[2], 'id') == ARGV[3] then
      redis.call('XDEL', KEYS[4], d[1])
      redis.call('SADD', KEYS[3], ARGV[3])
      return 1
    end
  end
  return redis.error_reply('LEASELOST the task is not in the queue (another task\'s lease)')
end
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 then
  return redis.error_reply('LEASELOST the task was never claimed')
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
return 1
`)

// countsScript: KEYS queue, leases, done, dead, tasks; ARGV group.
// Replies {never delivered, leased, expired, done, dead}.
var countsScript = script(`'stream', 'zset', 'set', 'stream', 'hash'`, queueLost(`KEYS[5]`)+`
local now = now_ms()
local held = redis.call('ZCARD', KEYS[2])
local expired = redis.call('ZCOUNT', KEYS[2], '-inf', now)
return {redis.call('XLEN', KEYS[1]) - held, held - expired, expired,
  redis.call('SCARD', KEYS[3]), redis.call('XLEN', KEYS[4])}
`)
