"""The Lua scripts: each mutation of an entry is one atomic script, as in memory-mcp 1.2+.

Key layout (memory-mcp's, under an optional prefix): `mem:<id>` hash, `memver:<id>`
list of JSON snapshots (newest first), `memrev:<id>` revision counter, `memop:<op>`
operation record, and index sets `tag:<t>`, `type:<t>`, `project:<p>` whose members are
`mem:<id>`. memctl adds three keys of its own: `memcount` (live entries, maintained by
the scripts so no write scans), `memexp` (sorted set: id -> expiry time of entries with a
TTL) and `memexpidx` (hash: id -> the index sets that entry is in), so expired entries
can be taken out of their index sets after Valkey drops their hash.

memctl also keeps a word index for `memory_search`: `memw:<word>`
(hash: `mem:<id>` member -> the word's occurrences in its title, id, tags and body,
"t,i,g,b"), `memvocab` (sorted set of every indexed word, for prefix lookups by
ZRANGEBYLEX) and `memterms:<id>` (the words the entry is indexed under with their counts,
"word:t,i,g,b" space-separated, with the entry's TTL). The words are computed by the
store (Python's tokenisation, `_rank.entry_terms`) and passed in; every script that
changes an entry moves its words in the same call, so the index never drifts. `memidx`
is `ready` once every entry is indexed (see `INDEX_BATCH`); until then searches scan.

On a Valkey Cluster each shard is this same layout under its own hash tag (see
`_keys`), so a script touches only its shard's slot; the keys it builds from `a.prefix`
share the slot of the keys it names. The scripts that name no key of their own (FETCH,
EXPORT, INDEX_READ) are given the shard's `memcount` as KEYS[1], only to route them.
Operation ids are reserved in their own slot before a cluster write (see `OP_RESERVE`)
and the write script runs without one.

Arguments arrive as one JSON object in ARGV[1]; results leave as one JSON object.
"""

from __future__ import annotations

__all__ = [
    "DELETE",
    "EXPORT",
    "FETCH",
    "GET",
    "IMPORT",
    "INDEX_BATCH",
    "INDEX_READ",
    "LEGACY_READ",
    "OP_RESERVE",
    "SEARCH",
    "STATS",
    "SWEEP",
    "UPGRADE",
    "WRITE",
]

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
local function idx_remove(a, itype, project, tags_csv)
  if itype and itype ~= '' then redis.call('SREM', a.prefix .. 'type:' .. itype, a.member) end
  if project then redis.call('SREM', a.prefix .. 'project:' .. project, a.member) end
  for _, tag in ipairs(split_csv(tags_csv)) do redis.call('SREM', a.prefix .. 'tag:' .. tag, a.member) end
end
local function idx_add(a, itype, project, tags)
  if itype ~= '' then redis.call('SADD', a.prefix .. 'type:' .. itype, a.member) end
  redis.call('SADD', a.prefix .. 'project:' .. project, a.member)
  for _, tag in ipairs(tags) do redis.call('SADD', a.prefix .. 'tag:' .. tag, a.member) end
end
local function word_drop(prefix, vocab, word, member)
  local key = prefix .. 'memw:' .. word
  redis.call('HDEL', key, member)
  if redis.call('HLEN', key) == 0 then redis.call('ZREM', vocab, word) end
end
local function drop_words(a, words)
  if not words then return end
  for w in string.gmatch(words, '%S+') do word_drop(a.prefix, KEYS[9], w, a.member) end
end
local function words_joined(words)
  local list = {}
  for w in pairs(words or {}) do list[#list + 1] = w end
  return table.concat(list, ' ')
end
local function words_with_counts(words)
  local list = {}
  for w, counts in pairs(words) do list[#list + 1] = w .. ':' .. counts end
  return table.concat(list, ' ')
end
-- Move the entry from the words in memterms ("word:counts ...") to `words` (word -> its
-- counts in title, id, tags and body, "t,i,g,b"; nil: the entry is gone). Words whose
-- counts stay are not touched, so an edit costs what it changes.
local function words_update(a, words)
  local had = {}
  local old = redis.call('GET', KEYS[8])
  if old then for w, counts in string.gmatch(old, '([^%s:]+):(%S+)') do had[w] = counts end end
  for w in pairs(had) do
    if not (words and words[w]) then word_drop(a.prefix, KEYS[9], w, a.member) end
  end
  for w, counts in pairs(words or {}) do
    if had[w] ~= counts then redis.call('HSET', a.prefix .. 'memw:' .. w, a.member, counts) end
    if had[w] == nil then redis.call('ZADD', KEYS[9], 0, w) end
  end
  if words then redis.call('SET', KEYS[8], words_with_counts(words)) else redis.call('DEL', KEYS[8]) end
end
-- memterms lives and dies with the entry's hash.
local function words_expire_with(a, mem)
  local pttl = redis.call('PTTL', mem)
  if pttl > 0 then redis.call('PEXPIRE', KEYS[8], pttl) end
end
local function count_by(a, delta)
  redis.call('INCRBY', KEYS[5], delta)
end
local function expiry_track(a, at, itype, project, tags_csv)
  local info = cjson.encode({type = itype, project = project, tags = tags_csv,
    words = words_joined(a.words)})
  redis.call('ZADD', KEYS[6], at, a.id)
  redis.call('HSET', KEYS[7], a.id, info)
end
local function expiry_untrack(a)
  redis.call('ZREM', KEYS[6], a.id)
  redis.call('HDEL', KEYS[7], a.id)
end
-- An entry that expired but was not swept yet: take it out of its indexes and the count.
local function forget_expired(a)
  local info = redis.call('HGET', KEYS[7], a.id)
  if info then
    local i = cjson.decode(info)
    idx_remove(a, i.type, i.project, i.tags)
    drop_words(a, i.words)
    count_by(a, -1)
    expiry_untrack(a)
  end
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
"""

# KEYS: mem, memver, memrev, memop (a placeholder without op_id), memcount, memexp,
#       memexpidx, memterms, memvocab
# ARGV[1]: {id, member, title, body, type, tags, source, project, ttl (0 = none),
#           if_version (-1 = none), op_id ("" = none), stamp, now, max_versions, op_ttl,
#           rollback (-1 = plain set), expect (rollback: the snapshot the words were
#           computed from), words, prefix}
# Returns JSON: {status, ...}; applied: {operation, revision, restored_from, count (this
# node's live entries after the write: the whole store's on a single node)}.
WRITE = (
    _PRELUDE
    + r"""
local a = cjson.decode(ARGV[1])
local mem, memver, memrev, memop = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local label = ''
local restored_from = ''
if a.rollback >= 0 then
  local raw = redis.call('LINDEX', memver, a.rollback)
  if not raw then return cjson.encode({status = 'not_found'}) end
  if raw ~= a.expect then return cjson.encode({status = 'changed'}) end
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
  forget_expired(a)
  count_by(a, 1)
else
  idx_remove(a, prev.type, prev.project, prev.tags)
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
idx_add(a, a.type, a.project, a.tags)
words_update(a, a.words)
push_snapshot(memver, snapshot(a.title, a.body, a.type, a.tags, a.source, a.project, a.stamp, operation, rev),
  a.max_versions)
if a.rollback >= 0 then
  local pttl = redis.call('PTTL', mem)
  if pttl > 0 then expiry_track(a, a.now + pttl / 1000, a.type, a.project, tags_csv) end
elseif a.ttl > 0 then
  redis.call('EXPIRE', mem, a.ttl)
  redis.call('EXPIRE', memver, a.ttl)
  redis.call('EXPIRE', memrev, a.ttl)
  expiry_track(a, a.now + a.ttl, a.type, a.project, tags_csv)
else
  redis.call('PERSIST', mem)
  redis.call('PERSIST', memver)
  redis.call('PERSIST', memrev)
  expiry_untrack(a)
end
words_expire_with(a, mem)
if a.op_id ~= '' then
  redis.call('HSET', memop, 'memory_id', a.id, 'revision', rev, 'action', operation)
  redis.call('EXPIRE', memop, a.op_ttl)
end
return cjson.encode({status = 'applied', operation = operation, revision = rev,
  restored_from = restored_from, count = tonumber(redis.call('GET', KEYS[5]) or '0')})
"""
)

# KEYS: mem, memver, memrev, a placeholder, memcount, memexp, memexpidx, memterms, memvocab
# ARGV[1]: {id, member, stamp, max_versions, prefix}
DELETE = (
    _PRELUDE
    + r"""
local a = cjson.decode(ARGV[1])
local mem, memver, memrev = KEYS[1], KEYS[2], KEYS[3]
local prev = to_map(redis.call('HGETALL', mem))
if prev.title == nil then return cjson.encode({status = 'not_found'}) end
local rev = redis.call('INCR', memrev)
push_snapshot(memver, snapshot(prev.title, prev.body or '', prev.type or '', split_csv(prev.tags),
  prev.source or 'unknown', prev.project or '', a.stamp, 'deleted', rev), a.max_versions)
redis.call('PERSIST', memver)
redis.call('PERSIST', memrev)
idx_remove(a, prev.type, prev.project, prev.tags)
words_update(a, nil)
redis.call('DEL', mem)
count_by(a, -1)
expiry_untrack(a)
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

# KEYS: memexp, memexpidx, memcount, memvocab
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
      a.member = 'mem:' .. id
      idx_remove(a, i.type, i.project, i.tags)
      for w in string.gmatch(i.words or '', '%S+') do word_drop(a.prefix, KEYS[4], w, a.member) end
      redis.call('DEL', a.prefix .. 'memterms:' .. id)
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

# KEYS: mem, memver, memrev, a placeholder, memcount, memexp, memexpidx, memterms, memvocab
# ARGV[1]: {id, member, entry ({title, body, type, tags, source, project, created, updated, hits, ttl}
#           or false), words (the entry's), revision, history (newest first), expires_at_ms
#           (0 = none), prefix, only_new (leave an entry that has any key: moving the
#           old cluster layout)}
# Returns {status = 'ok'}, or {status = 'kept'} when only_new found the entry there.
IMPORT = (
    _PRELUDE
    + r"""
local a = cjson.decode(ARGV[1])
local mem, memver, memrev = KEYS[1], KEYS[2], KEYS[3]
if a.only_new and redis.call('EXISTS', mem, memver, memrev) > 0 then
  return cjson.encode({status = 'kept'})
end
local prev = to_map(redis.call('HGETALL', mem))
if prev.title ~= nil then
  idx_remove(a, prev.type, prev.project, prev.tags)
  count_by(a, -1)
else
  forget_expired(a)
end
redis.call('DEL', mem, memver, memrev)
expiry_untrack(a)
local e = a.entry
if e then
  local tags_csv = table.concat(e.tags, ',')
  redis.call('HSET', mem, 'title', e.title, 'body', e.body, 'type', e.type, 'tags', tags_csv,
    'source', e.source, 'project', e.project, 'created', e.created, 'updated', e.updated,
    'hits', tostring(e.hits), 'ttl', e.ttl)
  idx_add(a, e.type, e.project, e.tags)
  count_by(a, 1)
  if a.expires_at_ms > 0 then expiry_track(a, a.expires_at_ms / 1000, e.type, e.project, tags_csv) end
end
words_update(a, e and a.words or nil)
if a.revision > 0 then redis.call('SET', memrev, a.revision) end
if #a.history > 0 then redis.call('RPUSH', memver, unpack(a.history)) end
if e and a.expires_at_ms > 0 then
  redis.call('PEXPIREAT', mem, a.expires_at_ms)
  redis.call('PEXPIREAT', memver, a.expires_at_ms)
  redis.call('PEXPIREAT', memrev, a.expires_at_ms)
  words_expire_with(a, mem)
end
return cjson.encode({status = 'ok'})
"""
)

# The old cluster layout (`mem:{<id>}`): everything about one entry, read at once to move
# it; its keys are removed after the move. KEYS: mem, memver, memrev
LEGACY_READ = r"""
return {redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[3]), redis.call('LRANGE', KEYS[2], 0, -1),
  redis.call('PTTL', KEYS[1])}
"""

# Cluster mode: reserve an operation id in its own slot before the entry's write.
# KEYS: memop; ARGV[1]: {id, pending_ttl}
OP_RESERVE = r"""
local a = cjson.decode(ARGV[1])
local rec = redis.call('HGETALL', KEYS[1])
if #rec > 0 then
  local r = {}
  for i = 1, #rec, 2 do r[rec[i]] = rec[i + 1] end
  return cjson.encode({status = 'recorded', memory_id = r.memory_id, revision = tonumber(r.revision or '0'),
    action = r.action or '', state = r.state or 'done'})
end
redis.call('HSET', KEYS[1], 'memory_id', a.id, 'state', 'pending')
redis.call('EXPIRE', KEYS[1], a.pending_ttl)
return cjson.encode({status = 'reserved'})
"""

# Many entries' hashes in one reply (a pipeline parses one reply
# per key, which dominated search time). ARGV: prefix, then the ids.
FETCH = r"""
local out = {}
for i = 2, #ARGV do
  out[#out + 1] = redis.call('HGETALL', ARGV[1] .. 'mem:' .. ARGV[i])
end
return out
"""

# Everything export needs about many ids in one reply: per id its
# hash, revision counter, snapshots and the hash's remaining TTL. ARGV: prefix, then the ids.
EXPORT = r"""
local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  out[#out + 1] = {
    redis.call('HGETALL', ARGV[1] .. 'mem:' .. id),
    redis.call('GET', ARGV[1] .. 'memrev:' .. id),
    redis.call('LRANGE', ARGV[1] .. 'memver:' .. id, 0, -1),
    redis.call('PTTL', ARGV[1] .. 'mem:' .. id),
  }
end
return out
"""

# memory-mcp before 1.1 kept no revision counter (and wrote no snapshot on create): give
# such an entry `memrev` = its snapshot count (at least 1), a `created` snapshot when it has
# none, and its hash's TTL on both. An entry that has a counter is left alone (idempotent).
# KEYS: mem, memver, memrev; returns 1 when the entry was upgraded, else 0
UPGRADE = (
    _PRELUDE
    + r"""
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local e = to_map(redis.call('HGETALL', KEYS[1]))
if e.title == nil then return 0 end
local versions = redis.call('LLEN', KEYS[2])
if versions == 0 then
  redis.call('LPUSH', KEYS[2], snapshot(e.title, e.body or '', e.type or '', split_csv(e.tags),
    e.source or 'unknown', e.project or '', e.updated or '', 'created', 1))
  versions = 1
end
if (e.created or '') == '' then redis.call('HSET', KEYS[1], 'created', e.updated or '') end
redis.call('SET', KEYS[3], versions)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return 1
"""
)

# The start of SEARCH and STATS: the store-wide statistics a query is scored by, as
# _rank.Stats defines them, read from what the write scripts keep: `searched`, the live
# entries (memcount less the entries gone: expired, not swept yet, due in memexp by now +
# slack, their hash missing), and per term `freq`, its words' hashes' sizes added up (each
# the number of entries holding the word) less the gone entries they hold. `term_words[k]`
# are the indexed words term k matches (a term of three or more characters matches the
# words it begins, a shorter one only itself), `term_walk[k]` their hashes' sizes added up.
_STATS_PRELUDE = r"""
local a = cjson.decode(ARGV[1])
if redis.call('GET', KEYS[1]) ~= 'ready' then return {'unbuilt'} end
local gone, ngone, any_gone = {}, 0, false
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', a.now + a.slack)) do
  if redis.call('EXISTS', a.prefix .. 'mem:' .. id) == 0 then
    gone['mem:' .. id] = true
    ngone = ngone + 1
    any_gone = true
  end
end
local nterms = #a.terms
local term_words, term_walk, freq = {}, {}, {}
for k, term in ipairs(a.terms) do
  local words
  if term.exact then
    words = {term.t}
  else
    words = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. term.t, '(' .. term.t .. '\255')
  end
  local walk, n = 0, 0
  for _, w in ipairs(words) do
    local key = a.prefix .. 'memw:' .. w
    local size = redis.call('HLEN', key)
    walk = walk + size
    n = n + size
    for m in pairs(gone) do n = n - redis.call('HEXISTS', key, m) end
  end
  term_words[k], term_walk[k], freq[k] = words, walk, n
end
local searched = tonumber(redis.call('GET', KEYS[2]) or '0') - ngone
"""

# A text query's best rows, from the word index. A term
# of three or more characters matches the indexed words it begins, a shorter one only
# itself; an entry's count of a term in each text is the sum over the words it matches.
# The first term's entries (the one of fewest) come from its words' hashes, or, when the
# smallest filter set is smaller, from looking that set's members up in them; each later
# term reads only the rows still left. Only entries in every filter set count, and not
# those gone. Scores use the store-wide `searched` and `freq` (_STATS_PRELUDE), whatever
# the filters, so no term is counted among the filtered entries.
# The rows ranked are the entries with every term (`all`) or, if none has, with any
# (`any`); `matched` is how many. They are scored as `_rank.order` scores them (idf =
# log(1 + searched / freq), weights 6/4/4/1 for title, id, tags and body, 1 + log(tf)) and
# only those that can be among the best `depth` come back: every row scoring more than the
# depth-th best score T (plus a margin: Lua and Python may round a sum differently, so
# scores within T * EPS of each other are taken as equal), and of the rows scoring about T
# the best by hits, update time and id (bytewise, as Python compares) among rows with the
# same counts (the same score in Python too). The bridge orders those exactly.
# A row's score depends on its counts alone, so rows are put in buckets by their counts
# (a few dozen distinct ones, however many rows): scores are computed and sorted per
# bucket. Rows are kept as arrays (a member and per term its counts); a single term's are
# only counted per bucket first, and placed only in the buckets that can reach the page.
# A row is [id, hits, updated, then per term its counts "t,i,g,b"], and with `whole` the
# entry's hash (HGETALL's flat list) last, so the page needs no second call; all rows one
# JSON text (one string is far cheaper for the client to read than an array per row).
# KEYS: memidx, memcount, memexp, memvocab
# ARGV[1]: {prefix, terms: [{t, exact}], filters: [index set keys], now, slack, max_visits,
#           depth, whole, store (optional: {searched, freq})}
# Returns {'unbuilt'} while the index is being built, {'too_many'} when the terms match
# more than max_visits entries, else {'ok', searched, mode, freq, rows, matched}. With
# `store` (a cluster's statistics: its shards' added up) scores use those.
SEARCH = (
    _STATS_PRELUDE
    + r"""
local function in_filters(m)
  for _, key in ipairs(a.filters) do
    if redis.call('SISMEMBER', key, m) == 0 then return false end
  end
  return true
end
-- The smallest filter set: when it is smaller than a term's words' hashes, look its
-- members up in them instead of walking them (a tag within a large store).
local smallest, smallest_size = nil, nil
for _, key in ipairs(a.filters) do
  local size = redis.call('SCARD', key)
  if smallest_size == nil or size < smallest_size then smallest, smallest_size = key, size end
end
-- Plan each term (its words; walk their hashes, or look the smallest set up in them) and
-- give up if that visits more than a.max_visits entries: the store then scans in batches,
-- as it does without an index, rather than hold the server in one long script.
local plans, visits = {}, 0
for k in ipairs(a.terms) do
  local words, walk = term_words[k], term_walk[k]
  local lookup = smallest ~= nil and smallest_size * #words < walk
  local cost = lookup and smallest_size * #words or walk
  plans[k] = {words = words, lookup = lookup, cost = cost, walk = walk}
  visits = visits + cost
end
if visits > a.max_visits then return {'too_many'} end
-- Whether an entry counts (in every filter set, not gone), asked once per entry.
local check = any_gone or #a.filters > 0
local counts_in = {}
local function counts(m)
  local v = counts_in[m]
  if v == nil then
    v = not gone[m] and in_filters(m)
    counts_in[m] = v
  end
  return v
end
-- The smallest filter set's members that count, read once: looked up in a term's words,
-- they need no check each (with one filter and none gone, that is every member).
local live_members = nil
local function smallest_live()
  if live_members == nil then
    live_members = redis.call('SMEMBERS', smallest)
    if any_gone or #a.filters > 1 then
      local all, n = live_members, 0
      live_members = {}
      for i = 1, #all do
        if counts(all[i]) then
          n = n + 1
          live_members[n] = all[i]
        end
      end
    end
  end
  return live_members
end
local function add_up(c, more)  -- two words of one term in one entry: their counts summed
  local sum, j = {}, 1
  for n in string.gmatch(c, '%d+') do sum[j] = tonumber(n) j = j + 1 end
  j = 1
  for n in string.gmatch(more, '%d+') do sum[j] = sum[j] + tonumber(n) j = j + 1 end
  return table.concat(sum, ',')
end
-- Call visit(member, counts "t,i,g,b") for each entry that counts and has term k (its
-- counts summed over the term's words); return how many there were.
local function walk(k, visit)
  local plan = plans[k]
  if #plan.words == 1 and not plan.lookup then  -- the common case: one hash, read as it is
    local flat = redis.call('HGETALL', a.prefix .. 'memw:' .. plan.words[1])
    if not check then
      for i = 1, #flat, 2 do visit(flat[i], flat[i + 1]) end
      return #flat / 2
    end
    local n = 0
    for i = 1, #flat, 2 do
      if counts(flat[i]) then
        visit(flat[i], flat[i + 1])
        n = n + 1
      end
    end
    return n
  end
  if plan.lookup and #plan.words == 1 then  -- a tag within a large store: visited as found
    local ms, key, n = smallest_live(), a.prefix .. 'memw:' .. plan.words[1], 0
    for first = 1, #ms, 1000 do
      local last = math.min(first + 999, #ms)
      local got = redis.call('HMGET', key, unpack(ms, first, last))
      for i = 1, #got do
        if got[i] then
          visit(ms[first + i - 1], got[i])
          n = n + 1
        end
      end
    end
    return n
  end
  local map, n = {}, 0
  local function put(m, c, known)  -- known: m counts (a live member of the smallest set)
    if check and not known and not counts(m) then return end
    local had = map[m]
    if had == nil then
      map[m] = c
      n = n + 1
    else
      map[m] = add_up(had, c)
    end
  end
  if plan.lookup then
    local ms = smallest_live()
    for _, w in ipairs(plan.words) do
      local key = a.prefix .. 'memw:' .. w
      for first = 1, #ms, 1000 do
        local last = math.min(first + 999, #ms)
        local got = redis.call('HMGET', key, unpack(ms, first, last))
        for i = 1, #got do
          if got[i] then put(ms[first + i - 1], got[i], true) end
        end
      end
    end
  else
    for _, w in ipairs(plan.words) do
      local flat = redis.call('HGETALL', a.prefix .. 'memw:' .. w)
      for i = 1, #flat, 2 do put(flat[i], flat[i + 1]) end
    end
  end
  for m, c in pairs(map) do visit(m, c) end
  return n
end
-- The rows in buckets by their counts: per term, '' for a term a row lacks, joined by ' '.
-- size[key] is how many rows a bucket has; its members may come later (see `unplaced`).
local bucket, size, parts_of, keys = {}, {}, {}, {}
local function new_bucket(key, parts)
  bucket[key], size[key] = {}, 0
  local copy = {}
  for k = 1, nterms do copy[k] = parts[k] end
  parts_of[key] = copy
  keys[#keys + 1] = key
end
local function place(m, key, parts)
  if bucket[key] == nil then new_bucket(key, parts) end
  local n = size[key] + 1
  bucket[key][n], size[key] = m, n
end
-- One term read as arrays: only the buckets' sizes now, and the members of the buckets the
-- page reaches once the scores say which (most of a common word's rows are in buckets
-- far below the page).
local unplaced = nil
local mode, complete = 'all', 0
-- A term's entries and their counts, as two arrays in the same order. A term of one word
-- whose entries all count (no filter, none gone, no look-up) is its hash's HKEYS and HVALS
-- (one hash that nothing changes between the two): no copying, which is most of what a
-- walk costs when a table grows by the entry.
local function entries(k)
  local plan = plans[k]
  if not check and #plan.words == 1 and not plan.lookup then
    local key = a.prefix .. 'memw:' .. plan.words[1]
    return redis.call('HKEYS', key), redis.call('HVALS', key)
  end
  local ms, cs, n = {}, {}, 0
  walk(k, function(m, c)
    n = n + 1
    ms[n], cs[n] = m, c
  end)
  return ms, cs
end
if nterms == 1 then
  local ms, cs = entries(1)
  for i = 1, #cs do
    local c = cs[i]
    local n = size[c]
    if n == nil then
      new_bucket(c, {c})
      n = 0
    end
    size[c] = n + 1
  end
  unplaced = {ms, cs}
  complete = #ms
else
  -- The terms from the fewest entries up, the rows (members, and per term done their
  -- counts, in arrays of the same order) narrowed to the entries each term has.
  local order = {}
  for k = 1, nterms do order[k] = k end
  table.sort(order, function(x, y) return plans[x].cost < plans[y].cost end)
  local first = order[1]
  local list, counts_by = entries(first)
  local first_list, first_counts = list, counts_by
  counts_by = {[first] = counts_by}
  local done = {first}
  for step = 2, nterms do
    local k, plan = order[step], plans[order[step]]
    local keep = {}  -- row index -> this term's counts, for the rows that have it
    local function found(i, c)
      local had = keep[i]
      keep[i] = had and add_up(had, c) or c
    end
    -- A later term reads only the rows left (its weight is the store's): it looks them
    -- up in its words' hashes when they are fewer than the hashes' entries, else walks
    -- the hashes for them.
    if #list * #plan.words < plan.walk then
      for _, w in ipairs(plan.words) do
        local key = a.prefix .. 'memw:' .. w
        for from = 1, #list, 1000 do
          local to = math.min(from + 999, #list)
          local got = redis.call('HMGET', key, unpack(list, from, to))
          for i = 1, #got do
            if got[i] then found(from + i - 1, got[i]) end
          end
        end
      end
    else
      local row = {}
      for i = 1, #list do row[list[i]] = i end
      for _, w in ipairs(plan.words) do
        local flat = redis.call('HGETALL', a.prefix .. 'memw:' .. w)
        for i = 1, #flat, 2 do
          local r = row[flat[i]]
          if r then found(r, flat[i + 1]) end
        end
      end
    end
    local next_list, next_counts, n = {}, {[k] = {}}, 0
    for _, j in ipairs(done) do next_counts[j] = {} end
    for i = 1, #list do
      local c = keep[i]
      if c then
        n = n + 1
        next_list[n] = list[i]
        next_counts[k][n] = c
        for _, j in ipairs(done) do next_counts[j][n] = counts_by[j][i] end
      end
    end
    list, counts_by = next_list, next_counts
    done[#done + 1] = k
  end
  local parts = {}
  for i = 1, #list do
    for k = 1, nterms do parts[k] = counts_by[k][i] end
    place(list[i], table.concat(parts, ' '), parts)
  end
  complete = #list
  if complete == 0 then  -- no entry has every term: rank those with any
    mode = 'any'
    local found = {[first] = {}}
    for i = 1, #first_list do found[first][first_list[i]] = first_counts[i] end
    for step = 2, nterms do
      local map = {}
      walk(order[step], function(m, c) map[m] = c end)
      found[order[step]] = map
    end
    local seen = {}
    for k0 = 1, nterms do
      for m in pairs(found[k0]) do
        if not seen[m] then
          seen[m] = true
          for k = 1, nterms do parts[k] = found[k][m] or '' end
          place(m, table.concat(parts, ' '), parts)
        end
      end
    end
  end
end
-- A cluster's statistics (its shards' added up, from STATS) score as the store's.
local searched_by, freq_by = searched, freq
if a.store then searched_by, freq_by = a.store.searched, a.store.freq end
-- Scores, as _rank.order computes them, once per bucket; a term's part of a score is
-- computed once per distinct counts (summed per term first, so a sum of several terms may
-- differ from Python's in its last bits: the margin above covers that).
local weights, idf, memo = {6.0, 4.0, 4.0, 1.0}, {}, {}
for k = 1, nterms do
  idf[k] = freq_by[k] > 0 and math.log(1 + searched_by / freq_by[k]) or 0.0
  memo[k] = {}
end
local function part(k, c)
  local s = memo[k][c]
  if s == nil then
    s = 0.0
    local j = 0
    for d in string.gmatch(c, '%d+') do
      j = j + 1
      local tf = tonumber(d)
      if tf > 0 then s = s + idf[k] * weights[j] * (1 + math.log(tf)) end
    end
    memo[k][c] = s
  end
  return s
end
local score, matched = {}, 0
for _, key in ipairs(keys) do
  local s, parts = 0.0, parts_of[key]
  for k = 1, nterms do
    if parts[k] ~= '' then s = s + part(k, parts[k]) end
  end
  score[key] = s
  matched = matched + size[key]
end
table.sort(keys, function(x, y) return score[x] > score[y] end)
local fields = {}  -- member -> {title, hits, updated}
local function fetch(m)
  local got = fields[m]
  if got == nil then
    got = redis.call('HMGET', a.prefix .. m, 'title', 'hits', 'updated')
    fields[m] = got
  end
  return got
end
-- x < y comparing bytes, as Python compares the UTF-8 texts. Lua's < follows the server's
-- collation (LC_COLLATE): byte order under C, POSIX and C.UTF-8, where it is used as it is
-- far cheaper; a locale that orders letters ('a' before 'B', 'é' before 'z') gets the loop.
local bytes_before
if 'B' < 'a' and 'Z' < '_' and 'a b' < 'a-b' and 'z' < '\195\169' then
  bytes_before = function(x, y) return x < y end
else
  bytes_before = function(x, y)
    for i = 1, math.min(#x, #y) do
      local p, q = string.byte(x, i), string.byte(y, i)
      if p ~= q then return p < q end
    end
    return #x < #y
  end
end
-- _rank.order's order among rows of equal score: hits, updated descending, then id
local function ahead(x, y)
  local fx, fy = fetch(x), fetch(y)
  local hx, hy = tonumber(fx[2]) or 0, tonumber(fy[2]) or 0
  if hx ~= hy then return hx > hy end
  local ux, uy = fx[3] or '', fy[3] or ''
  if ux ~= uy then return bytes_before(uy, ux) end
  return bytes_before(x, y)
end
local picked, picked_key = {}, {}
local function take(group, key)
  for _, m in ipairs(group) do
    picked[#picked + 1] = m
    picked_key[#picked] = key
  end
end
local t, eps = nil, nil  -- the depth-th best score, and the margin around it
if matched > a.depth then
  local seen = 0
  for _, key in ipairs(keys) do
    seen = seen + size[key]
    if seen >= a.depth then t = score[key] break end
  end
  eps = t * 1e-9
end
if unplaced then
  local reach = {}
  for _, key in ipairs(keys) do
    if t ~= nil and score[key] < t - eps then break end
    reach[key] = bucket[key]
  end
  local ms, cs = unplaced[1], unplaced[2]
  for i = 1, #cs do
    local b = reach[cs[i]]
    if b then b[#b + 1] = ms[i] end
  end
end
if t == nil then
  for _, key in ipairs(keys) do take(bucket[key], key) end
else
  -- how many rows score more than s + eps: those are ahead of a row scoring s in Python too
  local function above(s)
    local n = 0
    for _, key in ipairs(keys) do
      if score[key] <= s + eps then break end
      n = n + size[key]
    end
    return n
  end
  for _, key in ipairs(keys) do
    local s, group = score[key], bucket[key]
    if s > t + eps then
      take(group, key)
    elseif s >= t - eps then
      local room = a.depth - above(s)
      if #group <= room then
        take(group, key)
      else
        local best = {}
        for _, m in ipairs(group) do
          if #best < room or ahead(m, best[#best]) then
            local i = #best + 1
            while i > 1 and ahead(m, best[i - 1]) do best[i] = best[i - 1] i = i - 1 end
            best[i] = m
            best[room + 1] = nil
          end
        end
        take(best, key)
      end
    else
      break
    end
  end
end
local out = {}
for i, m in ipairs(picked) do
  local got, flat = nil, nil
  if a.whole then
    flat = redis.call('HGETALL', a.prefix .. m)
    got = {}
    for j = 1, #flat, 2 do
      local f = flat[j]
      if f == 'title' then got[1] = flat[j + 1] elseif f == 'hits' then got[2] = flat[j + 1]
      elseif f == 'updated' then got[3] = flat[j + 1] end
    end
  else
    got = fetch(m)
  end
  if got[1] then
    local item = {string.sub(m, 5), got[2] or '0', got[3] or ''}
    local parts = parts_of[picked_key[i]]
    for k = 1, nterms do item[k + 3] = parts[k] ~= '' and parts[k] or '0,0,0,0' end
    if flat then item[nterms + 4] = flat end
    out[#out + 1] = item
  else  -- gone without its words (not through memctl): not a match
    matched = matched - 1
  end
end
if #out == 0 then return {'ok', searched, mode, freq, '[]', matched} end
return {'ok', searched, mode, freq, cjson.encode(out), matched}
"""
)

# A query's store-wide statistics on this node (or shard): the live entries and per term
# its document frequency (see _STATS_PRELUDE). A cluster adds its shards' up before it
# asks them for rows. KEYS and ARGV as SEARCH's (filters and the rest unused).
# Returns {'unbuilt'} while the index is being built, else {'ok', searched, freq}.
STATS = (
    _STATS_PRELUDE
    + r"""
return {'ok', searched, freq}
"""
)

# Building the word index for entries written before it existed:
# per id its hash and revision counter. ARGV: prefix, then the ids.
INDEX_READ = r"""
local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  out[#out + 1] = {
    redis.call('HGETALL', ARGV[1] .. 'mem:' .. id),
    redis.call('GET', ARGV[1] .. 'memrev:' .. id) or '',
  }
end
return out
"""

# Index a batch of entries read by INDEX_READ. An entry is skipped when it has words
# already (written since, or indexed by an earlier run) or changed since it was read (its
# revision moved, or it is gone): a write indexes it then. An entry with a TTL that memctl
# does not track yet (written by memory-mcp) is tracked, so its words go when it expires.
# KEYS: memexp, memexpidx, memvocab
# ARGV[1]: {prefix, now, entries: [{id, revision, words (word -> counts), type, project, tags}]}
# Returns how many entries were indexed.
INDEX_BATCH = r"""
local function words_joined(words)
  local list, pairs_ = {}, {}
  for w, counts in pairs(words) do
    list[#list + 1] = w
    pairs_[#pairs_ + 1] = w .. ':' .. counts
  end
  return table.concat(list, ' '), table.concat(pairs_, ' ')
end
local a = cjson.decode(ARGV[1])
local done = 0
for _, e in ipairs(a.entries) do
  local mem = a.prefix .. 'mem:' .. e.id
  local terms = a.prefix .. 'memterms:' .. e.id
  local member = 'mem:' .. e.id
  if redis.call('EXISTS', terms) == 0 and redis.call('HEXISTS', mem, 'title') == 1
      and (redis.call('GET', a.prefix .. 'memrev:' .. e.id) or '') == e.revision then
    for w, counts in pairs(e.words) do
      redis.call('HSET', a.prefix .. 'memw:' .. w, member, counts)
      redis.call('ZADD', KEYS[3], 0, w)
    end
    local joined, with_counts = words_joined(e.words)
    redis.call('SET', terms, with_counts)
    local pttl = redis.call('PTTL', mem)
    if pttl > 0 then
      redis.call('PEXPIRE', terms, pttl)
      local info = redis.call('HGET', KEYS[2], e.id)
      local i = info and cjson.decode(info) or {type = e.type, project = e.project, tags = e.tags}
      i.words = joined
      redis.call('ZADD', KEYS[1], a.now + pttl / 1000, e.id)
      redis.call('HSET', KEYS[2], e.id, cjson.encode(i))
    end
    done = done + 1
  end
end
return done
"""
