"""The counters of a fleet, in Redis: one Lua script per check, so a check and its count
are one atomic step for every replica.

Times inside the scripts are Redis's own clock (``TIME``): leases and windows do not
depend on the replicas' clocks agreeing. The ends a caller passes (a rest's end, a
budget period's end) are wall-clock times of the caller, compared with Redis's clock:
machines kept in time by NTP differ by milliseconds.

Keys (all under `PREFIX`, each name's keys hash-tagged into one Redis Cluster slot):
``{NAME}:s`` a sorted set of slot holders scored by lease end; ``{NAME}:w`` (+ ``:t`` total,
``:n`` sequence) a sliding window of ``seq:amount`` entries scored by time; ``{NAME}:b`` a
hash (spent, expires, seeded) that Redis forgets at the period end, ``{NAME}:r`` its
reservations (holder -> amount) and ``{NAME}:rx`` when each lapses; ``{NAME}:k`` a rest's
end; ``{members}`` the replicas alive, scored by the end of their heartbeat.

A budget's spend is trusted only once seeded from the usage ledger (``seeded``): a Redis
that restarted empty, or a new one, answers a reservation `Unseeded` until a replica has
read the period's spend from the ledger (the larger of the ledger's and what was settled
since stays). Windows and slots restart empty (the slots of running streams come back
with the next heartbeat).
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from ..counters import Unseeded
from .resp import Resp

PREFIX = "hydra:"
# A reservation whose replica died (never settled) lapses after this long.
RESERVATION_TTL = 900.0

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

ACQUIRE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl * 1000) + 1000)
return 1
"""
)

# KEYS: one name's slot set. ARGV: ttl, then its holders. A lease the store lost (Redis
# restarted empty) is taken again: its stream runs.
RENEW = (
    _NOW
    + """
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl * 1000) + 1000)
return 1
"""
)

# KEYS: the members set. ARGV: ttl, replica ("-": none). Returns the replicas alive.
MEMBERS = (
    _NOW
    + """
local ttl = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[2] ~= '-' then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], math.ceil(ttl * 1000) + 1000)
end
return redis.call('ZCARD', KEYS[1])
"""
)

# KEYS: entries, total, sequence. ARGV: limit, amount, period, "1" to check the limit.
# Returns "0" when counted, else the seconds until the amount would fit.
HIT = (
    _NOW
    + """
local period = tonumber(ARGV[3])
local horizon = now - period
local total = tonumber(redis.call('GET', KEYS[2]) or '0')
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', horizon)
for _, m in ipairs(old) do total = total - tonumber(string.match(m, ':(.*)$')) end
if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', horizon) end
if redis.call('ZCARD', KEYS[1]) == 0 then total = 0 end
local amount = tonumber(ARGV[2])
local keep = math.ceil(period * 1000) + 1000
if ARGV[4] == '1' and total + amount > tonumber(ARGV[1]) then
  redis.call('SET', KEYS[2], tostring(total), 'PX', keep)
  local need = total + amount - tonumber(ARGV[1])
  local freed = 0
  local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    freed = freed + tonumber(string.match(entries[i], ':(.*)$'))
    if freed >= need then
      return tostring(math.max(tonumber(entries[i + 1]) + period - now, 0.001))
    end
  end
  return tostring(period)
end
local seq = redis.call('INCR', KEYS[3])
redis.call('PEXPIRE', KEYS[3], keep)
redis.call('ZADD', KEYS[1], now, seq .. ':' .. ARGV[2])
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('SET', KEYS[2], tostring(total + amount), 'PX', keep)
return '0'
"""
)

# KEYS: budget, reservations, reservation ends. ARGV[1] the operation, then its values.
# Returns {answer, spent, reserved} as strings.
BUDGET = (
    _NOW
    + """
local op = ARGV[1]
local expires = tonumber(redis.call('HGET', KEYS[1], 'expires') or '0')
if expires > 0 and expires <= now then redis.call('DEL', KEYS[1]) end
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, h in ipairs(lapsed) do redis.call('HDEL', KEYS[2], h) end
if #lapsed > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) end
local spent = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
local reserved = 0
for _, v in ipairs(redis.call('HVALS', KEYS[2])) do reserved = reserved + tonumber(v) end
local answer = 1
if op == 'reserve' then
  local amount, cap, holder = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
  if redis.call('HEXISTS', KEYS[1], 'seeded') == 0 then
    answer = -1
  elseif spent + reserved + amount > cap then
    answer = 0
  else
    redis.call('HSET', KEYS[2], holder, ARGV[2])
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[5]), holder)
    local keep = math.ceil(tonumber(ARGV[5]) * 1000)
    redis.call('PEXPIRE', KEYS[2], keep)
    redis.call('PEXPIRE', KEYS[3], keep)
    reserved = reserved + amount
  end
elseif op == 'settle' then
  local holder, add, ends = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
  local had = tonumber(redis.call('HGET', KEYS[2], holder) or '0')
  redis.call('HDEL', KEYS[2], holder)
  redis.call('ZREM', KEYS[3], holder)
  reserved = reserved - had
  spent = spent + add
  redis.call('HSET', KEYS[1], 'spent', tostring(spent), 'expires', ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], math.ceil(ends * 1000))
elseif op == 'seed' then
  if redis.call('HEXISTS', KEYS[1], 'seeded') == 0 then
    spent = math.max(spent, tonumber(ARGV[2]))
    redis.call('HSET', KEYS[1], 'spent', tostring(spent), 'expires', ARGV[3], 'seeded', '1')
    redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(ARGV[3]) * 1000))
  end
end
return {answer, tostring(spent), tostring(reserved)}
"""
)

REST = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local ends = tonumber(ARGV[1])
if ends > current then redis.call('SET', KEYS[1], ARGV[1], 'PXAT', math.ceil(ends * 1000)) end
return 1
"""


def _number(value: Any) -> float:
    return float(value.decode() if isinstance(value, bytes) else value)


def key(name: str, kind: str) -> str:
    """The store's key of `name`'s `kind` (its slots ``s``, window ``w``, budget ``b``...):
    every key of one name in one Redis Cluster slot."""
    return f"{PREFIX}{{{name}}}:{kind}"


class RedisCounters:
    """`Counters` in one Redis (or the primary Sentinel names, or a Redis Cluster), for
    every replica that points at it. Its methods raise `StoreConnectionError` or
    TimeoutError when Redis cannot be reached (the caller, `cluster.failover`, decides
    what that means), and `reserve` raises `Unseeded` for a budget the store lost."""

    def __init__(self, url: str, *, timeout: float = 0.25, **where: Any) -> None:
        self.url = url
        self.resp = Resp(url, timeout=timeout, **where)
        self.members_key = PREFIX + "{members}"

    async def close(self) -> None:
        await self.resp.close()

    async def ping(self) -> bool:
        return bool(await self.resp.execute("PING"))

    async def acquire(self, name: str, limit: int, holder: str, ttl: float) -> bool:
        return bool(await self.resp.script(ACQUIRE, [key(name, "s")], [limit, holder, ttl]))

    async def release(self, name: str, holder: str) -> None:
        await self.resp.execute("ZREM", key(name, "s"), holder)

    async def renew(self, leases: list[tuple[str, str]], ttl: float) -> None:
        await self.beat(leases, ttl, "")

    async def beat(self, leases: list[tuple[str, str]], ttl: float, replica: str) -> int:
        """Renew `leases` and `replica`'s membership; the replicas alive (with `replica`).
        One script per name (a name's keys share a slot), sent together."""
        holders: dict[str, list[str]] = {}
        for name, holder in leases:
            holders.setdefault(name, []).append(holder)
        calls = [self.resp.script(RENEW, [key(n, "s")], [ttl, *hs]) for n, hs in holders.items()]
        calls.append(self.resp.script(MEMBERS, [self.members_key], [ttl, replica or "-"]))
        answers = await asyncio.gather(*calls, return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        alive: Any = answers[-1]
        return int(alive)

    async def held(self, name: str) -> list[str]:
        """The holders of `name`'s slots now, lapsed ones included until the next check."""
        now = time.time()
        found = await self.resp.execute("ZRANGEBYSCORE", key(name, "s"), now, "+inf")
        return [h.decode() for h in found]

    def _window_keys(self, name: str) -> list[str]:
        base = key(name, "w")
        return [base, base + ":t", base + ":n"]

    async def hit(self, name: str, limit: float, amount: float, period: float) -> float:
        answer = await self.resp.script(HIT, self._window_keys(name), [limit, amount, period, 1])
        return _number(answer)

    async def add(self, name: str, amount: float, period: float) -> None:
        await self.resp.script(HIT, self._window_keys(name), [0, amount, period, 0])

    def _budget_keys(self, name: str) -> list[str]:
        return [key(name, "b"), key(name, "r"), key(name, "rx")]

    async def _budget_op(self, name: str, *args: Any) -> tuple[int, float, float]:
        answer, spent, reserved = await self.resp.script(
            BUDGET, self._budget_keys(name), list(args)
        )
        return int(answer), _number(spent), _number(reserved)

    async def reserve(self, name: str, amount: float, cap: float, holder: str) -> bool:
        return (await self.reserve_seen(name, amount, cap, holder))[0]

    async def reserve_seen(
        self, name: str, amount: float, cap: float, holder: str
    ) -> tuple[bool, float]:
        """`reserve`, and what was spent and reserved after it (for the fallback)."""
        answer, spent, reserved = await self._budget_op(
            name, "reserve", amount, cap, holder, RESERVATION_TTL
        )
        if answer < 0:
            raise Unseeded(name)
        return answer == 1, spent + reserved

    async def settle(self, name: str, holder: str, spent: float, expires: float) -> None:
        await self._budget_op(name, "settle", holder, spent, expires)

    async def spent(self, name: str) -> tuple[float, float]:
        _, spent, reserved = await self._budget_op(name, "spent")
        return spent, reserved

    async def seed(self, name: str, spent: float, expires: float) -> None:
        await self._budget_op(name, "seed", spent, expires)

    async def rest(self, name: str, until: float) -> None:
        if math.isfinite(until) and until > time.time():
            await self.resp.script(REST, [key(name, "k")], [repr(float(until))])

    async def rested_until(self, name: str) -> float:
        value = await self.resp.execute("GET", key(name, "k"))
        if value is None:
            return 0.0
        until = _number(value)
        return until if until > time.time() else 0.0

    async def rests(self, names: list[str]) -> list[float]:
        """`rested_until` of many names, sent together (MGET where one server holds them
        all; a GET each, pipelined, in a cluster)."""
        if not names:
            return []
        now = time.time()
        keys = [key(n, "k") for n in names]
        if self.resp.cluster:
            values = await asyncio.gather(*(self.resp.execute("GET", k) for k in keys))
        else:
            values = await self.resp.execute("MGET", *keys)
        return [u if (u := _number(v) if v is not None else 0.0) > now else 0.0 for v in values]
