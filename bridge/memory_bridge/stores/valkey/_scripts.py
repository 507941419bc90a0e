"""The Lua scripts: each mutation of an entry is one atomic script, as in memory-mcp 1.2+.

Key layout (memory-mcp's, under an optional prefix): `mem:<id>` hash, `memver:<id>`
list of JSON snapshots (newest first), `memrev:<id>` revision counter, `memop:<op>`
operation record, and index sets `tag:<t>`, `type:<t>`, `project:<p>` whose members are
`mem:<id>`. memctl adds three keys of its own: `memcount` (live entries, maintained by
the scripts so no write scans), `memexp` (sorted set: id -> expiry time of entries with a
TTL) and `memexpidx` (hash: id -> the index sets that entry is in), so expired entries
can be taken out of their index sets after Valkey drops their hash.

Arguments arrive as one JSON object in ARGV[1]; results leave as one JSON object.
"""

from __future__ import annotations

__all__ = ["DELETE", "GET", "IMPORT", "SWEEP", "WRITE"]

_PRELUDE = r"""
local function to_map(flat)
  local m = {}
  for i = 1, #flat, 2 do m[flat[i]] = flat[i + 1] end
  return m
end
local function split_csv(s)
  local t = {}
  if not s then return t end
  for part in string.gmatch(s, '([^,]+)') do t[#t + 1] = part end
  return t
end
local function tags_json(t)
  if #t == 0 then return '[]' end
  return cjson.encode(t)
end
local function idx_remove(prefix, member, itype, project, tags_csv)
  if itype and itype ~= '' then redis.call('SREM', prefix .. 'type:' .. itype, member) end
  if project then redis.call('SREM', prefix .. 'project:' .. project, member) end
  for _, tag in ipairs(split_csv(tags_csv)) do redis.call('SREM', prefix .. 'tag:' .. tag, member) end
end
local function idx_add(prefix, member, itype, project, tags)
  if itype ~= '' then redis.call('SADD', prefix .. 'type:' .. itype, member) end
  redis.call('SADD', prefix .. 'project:' .. project, member)
  for _, tag in ipairs(tags) do redis.call('SADD', prefix .. 'tag:' .. tag, member) end
end
local function snapshot(title, body, itype, tags, source, project, updated, operation, rev)
  return '{"title":' .. cjson.encode(title) .. ',"body":' .. cjson.encode(body)
    .. ',"type":' .. cjson.encode(itype) .. ',"tags":' .. tags_json(tags)
    .. ',"source":' .. cjson.encode(source) .. ',"project":' .. cjson.encode(project)
    .. ',"updated":' .. cjson.encode(updated) .. ',"operation":' .. cjson.encode(operation)
    .. ',"rev":' .. rev .. '}'
end
local function push_snapshot(key, json, max_versions)
  redis.call('LPUSH', key, json)
  redis.call('LTRIM', key, 0, max_versions - 1)
end
-- An entry that expired but was not swept yet: take it out of its indexes and the count.
local function forget_expired(a, member, memcount, memexpidx, memexp)
  local info = redis.call('HGET', memexpidx, a.id)
  if info then
    local i = cjson.decode(info)
    idx_remove(a.prefix, member, i.type, i.project, i.tags)
    redis.call('DECR', memcount)
    redis.call('HDEL', memexpidx, a.id)
    redis.call('ZREM', memexp, a.id)
  end
end
"""

# KEYS: mem, memver, memrev, memop (or a placeholder), memcount, memexp, memexpidx
# ARGV[1]: {id, title, body, type, tags, source, project, ttl (0 = none), if_version (-1 = none),
#           op_id ("" = none), stamp, now, max_versions, op_ttl, rollback (-1 = plain set), prefix}
WRITE = (
    _PRELUDE
    + r"""
local a = cjson.decode(ARGV[1])
local mem, memver, memrev, memop = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local memcount, memexp, memexpidx = KEYS[5], KEYS[6], KEYS[7]
local member = 'mem:' .. a.id
local label = ''
local restored_from = ''
if a.rollback >= 0 then
  local raw = redis.call('LINDEX', memver, a.rollback)
  if not raw then return cjson.encode({status = 'not_found'}) end
  local ok, snap = pcall(cjson.decode, raw)
  if not ok or type(snap) ~= 'table' or type(snap.title) ~= 'string' then
    return cjson.encode({status = 'bad_snapshot'})
  end
  a.title, a.body, a.type = snap.title, tostring(snap.body or ''), tostring(snap.type or '')
  a.tags = type(snap.tags) == 'table' and snap.tags or {}
  a.source = (type(snap.source) == 'string' and snap.source ~= '') and snap.source or 'unknown'
  a.project = type(snap.project) == 'string' and snap.project or ''
  label = 'rollback_to_' .. a.rollback
  restored_from = type(snap.updated) == 'string' and snap.updated or 'unknown'
end
if a.op_id ~= '' then
  local rec = redis.call('HGETALL', memop)
  if #rec > 0 then
    local r = to_map(rec)
    if r.memory_id ~= a.id then return cjson.encode({status = 'op_mismatch', recorded_id = r.memory_id}) end
    return cjson.encode({status = 'replayed', operation = r.action, revision = tonumber(r.revision)})
  end
end
local current = tonumber(redis.call('GET', memrev) or '0')
if a.if_version >= 0 and current ~= a.if_version then
  return cjson.encode({status = 'conflict', current_revision = current})
end
local prev = to_map(redis.call('HGETALL', mem))
local is_new = prev.title == nil
local operation = label ~= '' and label or (is_new and 'created' or 'modified')
if is_new then
  forget_expired(a, member, memcount, memexpidx, memexp)
  redis.call('INCR', memcount)
else
  idx_remove(a.prefix, member, prev.type, prev.project, prev.tags)
end
local rev = redis.call('INCR', memrev)
local ttl_field
if a.rollback >= 0 then
  ttl_field = prev.ttl or ''
elseif a.ttl > 0 then
  ttl_field = tostring(a.ttl)
else
  ttl_field = ''
end
local tags_csv = table.concat(a.tags, ',')
redis.call('HSET', mem, 'title', a.title, 'body', a.body, 'type', a.type, 'tags', tags_csv,
  'source', a.source, 'project', a.project, 'updated', a.stamp,
  'hits', is_new and '0' or (prev.hits or '0'), 'ttl', ttl_field,
  'created', is_new and a.stamp or (prev.created or a.stamp))
idx_add(a.prefix, member, a.type, a.project, a.tags)
push_snapshot(memver, snapshot(a.title, a.body, a.type, a.tags, a.source, a.project, a.stamp, operation, rev),
  a.max_versions)
local idx_info = cjson.encode({type = a.type, project = a.project, tags = tags_csv})
if a.rollback >= 0 then
  if redis.call('PTTL', mem) > 0 then redis.call('HSET', memexpidx, a.id, idx_info) end
elseif a.ttl > 0 then
  redis.call('EXPIRE', mem, a.ttl)
  redis.call('EXPIRE', memver, a.ttl)
  redis.call('EXPIRE', memrev, a.ttl)
  redis.call('ZADD', memexp, a.now + a.ttl, a.id)
  redis.call('HSET', memexpidx, a.id, idx_info)
else
  redis.call('PERSIST', mem)
  redis.call('PERSIST', memver)
  redis.call('PERSIST', memrev)
  redis.call('ZREM', memexp, a.id)
  redis.call('HDEL', memexpidx, a.id)
end
if a.op_id ~= '' then
  redis.call('HSET', memop, 'memory_id', a.id, 'revision', rev, 'action', operation)
  redis.call('EXPIRE', memop, a.op_ttl)
end
return cjson.encode({
  status = 'applied', operation = operation, revision = rev, restored_from = restored_from
})
"""
)

# KEYS: mem, memver, memrev, memcount, memexp, memexpidx
# ARGV[1]: {id, stamp, max_versions, prefix}
DELETE = (
    _PRELUDE
    + r"""
local a = cjson.decode(ARGV[1])
local mem, memver, memrev, memcount, memexp, memexpidx = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local prev = to_map(redis.call('HGETALL', mem))
if prev.title == nil then return cjson.encode({status = 'not_found'}) end
local rev = redis.call('INCR', memrev)
push_snapshot(memver, snapshot(prev.title, prev.body or '', prev.type or '', split_csv(prev.tags),
  prev.source or 'unknown', prev.project or '', a.stamp, 'deleted', rev), a.max_versions)
redis.call('PERSIST', memver)
redis.call('PERSIST', memrev)
idx_remove(a.prefix, 'mem:' .. a.id, prev.type, prev.project, prev.tags)
redis.call('DEL', mem)
redis.call('DECR', memcount)
redis.call('ZREM', memexp, a.id)
redis.call('HDEL', memexpidx, a.id)
return cjson.encode({status = 'ok', revision = rev})
"""
)

# KEYS: mem, memrev
GET = r"""
local flat = redis.call('HGETALL', KEYS[1])
local title = nil
for i = 1, #flat, 2 do if flat[i] == 'title' then title = flat[i + 1] end end
if title == nil then return nil end
local hits = redis.call('HINCRBY', KEYS[1], 'hits', 1)
local rev = tonumber(redis.call('GET', KEYS[2]) or '0')
return {flat, hits, rev}
"""

# KEYS: memexp, memexpidx, memcount
# ARGV[1]: {now, prefix, batch}
SWEEP = (
    _PRELUDE
    + r"""
local a = cjson.decode(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', a.now, 'LIMIT', 0, a.batch)
local dropped = 0
for _, id in ipairs(ids) do
  if redis.call('EXISTS', a.prefix .. 'mem:' .. id) == 0 then
    local info = redis.call('HGET', KEYS[2], id)
    if info then
      local i = cjson.decode(info)
      idx_remove(a.prefix, 'mem:' .. id, i.type, i.project, i.tags)
      redis.call('DECR', KEYS[3])
      dropped = dropped + 1
    end
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZREM', KEYS[1], id)
  end
end
return dropped
"""
)

# KEYS: mem, memver, memrev, memcount, memexp, memexpidx
# ARGV[1]: {id, entry ({title, body, type, tags, source, project, created, updated, hits, ttl} or false),
#           revision, history (newest first), expires_at_ms (0 = none), prefix}
IMPORT = (
    _PRELUDE
    + r"""
local a = cjson.decode(ARGV[1])
local mem, memver, memrev, memcount, memexp, memexpidx = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local member = 'mem:' .. a.id
local prev = to_map(redis.call('HGETALL', mem))
if prev.title ~= nil then
  idx_remove(a.prefix, member, prev.type, prev.project, prev.tags)
  redis.call('DECR', memcount)
else
  forget_expired(a, member, memcount, memexpidx, memexp)
end
redis.call('DEL', mem, memver, memrev)
redis.call('ZREM', memexp, a.id)
redis.call('HDEL', memexpidx, a.id)
local e = a.entry
if e then
  local tags_csv = table.concat(e.tags, ',')
  redis.call('HSET', mem, 'title', e.title, 'body', e.body, 'type', e.type, 'tags', tags_csv,
    'source', e.source, 'project', e.project, 'created', e.created, 'updated', e.updated,
    'hits', tostring(e.hits), 'ttl', e.ttl)
  idx_add(a.prefix, member, e.type, e.project, e.tags)
  redis.call('INCR', memcount)
  if a.expires_at_ms > 0 then
    redis.call('ZADD', memexp, a.expires_at_ms / 1000, a.id)
    redis.call('HSET', memexpidx, a.id, cjson.encode({type = e.type, project = e.project, tags = tags_csv}))
  end
end
if a.revision > 0 then redis.call('SET', memrev, a.revision) end
if #a.history > 0 then redis.call('RPUSH', memver, unpack(a.history)) end
if e and a.expires_at_ms > 0 then
  redis.call('PEXPIREAT', mem, a.expires_at_ms)
  redis.call('PEXPIREAT', memver, a.expires_at_ms)
  redis.call('PEXPIREAT', memrev, a.expires_at_ms)
end
return 1
"""
)
