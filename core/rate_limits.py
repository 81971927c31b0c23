"""What an owner may start: unfinished runs and tasks (``max_active_runs``, ``max_queued_tasks``) and runs per
minute (``run_rate_per_minute`` sustained, ``run_burst`` at once: a token bucket per owner).

The limits are counted in the database under the owner's row lock, so two concurrent requests cannot both
take the last place; the bucket lives in Redis (one Lua script: atomic across API processes and hosts, on
Redis's clock) or, embedded, in the process. A refused run is answered 429 with a machine-readable code;
the rate limit says in ``Retry-After`` when the next token is there. A Redis that cannot be reached lets the
run through (the limits still hold): a broker outage must not stop the service, whose tasks wait for it.
"""

from __future__ import annotations

import logging
import math
import threading
import time

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ackreplay.core.config import get_settings
from ackreplay.core.errors import ServiceError
from ackreplay.core.fair_queue import UNFINISHED
from ackreplay.core.orm import Owner, Run, Task
from ackreplay.core.queue import redis_client

log = logging.getLogger("ackreplay.rate_limits")
BUCKET_KEY = "ackreplay:run-bucket:"

#: Take one token of the bucket ``KEYS[1]`` refilled at ``ARGV[1]`` tokens/s up to ``ARGV[2]``: ``{1, "0"}``
#: when taken, else ``{0, seconds until the next token}`` (as text: Redis truncates Lua numbers to integers).
TAKE_TOKEN = """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(state[1]) or burst
local stamp = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - stamp) * rate)
local taken, wait = 0, 0
if tokens >= 1 then tokens = tokens - 1; taken = 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'stamp', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 60)
return {taken, tostring(wait)}
"""


class TooManyUnfinished(ServiceError):
    """An owner's limit on unfinished runs or tasks is reached."""

    status = 429


class RateLimited(ServiceError):
    """An owner started runs faster than ``run_rate_per_minute`` (past its burst)."""

    status = 429
    code = "rate_limited"

    def __init__(self, detail: str, retry_after: float) -> None:
        super().__init__(detail)
        self.retry_after = max(1, math.ceil(retry_after))

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class LocalBuckets:
    """The embedded server's buckets (one process): owner id → (tokens, monotonic stamp)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state: dict[str, tuple[float, float]] = {}

    def take(self, owner_id: str, rate: float, burst: int) -> float:
        with self.lock:
            stamp = time.monotonic()
            tokens, last = self.state.get(owner_id, (float(burst), stamp))
            tokens = min(float(burst), tokens + (stamp - last) * rate)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / rate
            self.state[owner_id] = (tokens - 1 if tokens >= 1 else tokens, stamp)
            return wait


LOCAL = LocalBuckets()


def take_token(owner_id: str) -> float:
    """Take one of the owner's run tokens: 0, or the seconds until one is there (nothing taken)."""
    settings = get_settings()
    if settings.run_rate_per_minute is None:
        return 0.0
    rate = settings.run_rate_per_minute / 60
    if settings.embedded_worker:
        return LOCAL.take(owner_id, rate, settings.run_burst)
    try:
        taken, wait = redis_client().eval(TAKE_TOKEN, 1, BUCKET_KEY + owner_id, repr(rate), settings.run_burst)
    except Exception:
        log.warning("Redis unreachable: run rate of owner %s not checked", owner_id, exc_info=True)
        return 0.0
    return 0.0 if int(taken) else float(wait)


def check_unfinished(session: Session, owner: Owner, new_tasks: int) -> None:
    """Refuse (429) a run that would pass the owner's unfinished runs or tasks limit; holds the owner's
    row lock until the transaction ends (FOR NO KEY UPDATE, as ``core.quotas.check_locked``)."""
    settings = get_settings()
    if settings.max_active_runs is None and settings.max_queued_tasks is None:
        return
    session.execute(select(Owner.id).where(Owner.id == owner.id).with_for_update(key_share=True))
    if settings.max_active_runs is not None:
        runs = session.scalar(select(func.count()).select_from(Run).where(
            Run.owner_id == owner.id, Run.status.in_(("queued", "running")))) or 0
        if runs + 1 > settings.max_active_runs:
            raise TooManyUnfinished(f"owner {owner.name!r} has {runs} unfinished runs, the most it may have "
                                    f"({settings.max_active_runs}); start more once some have finished",
                                    code="too_many_runs")
    if settings.max_queued_tasks is not None:
        tasks = session.scalar(select(func.count()).select_from(Task).join(Run, Run.id == Task.run_id).where(
            Run.owner_id == owner.id, Task.status.in_(UNFINISHED))) or 0
        if tasks + new_tasks > settings.max_queued_tasks:
            raise TooManyUnfinished(f"owner {owner.name!r} has {tasks} unfinished tasks; this run's {new_tasks} "
                                    f"more would pass the most it may have ({settings.max_queued_tasks}); start "
                                    "it once some have finished, or with fewer captures", code="too_many_tasks")


def admit_run(session: Session, owner: Owner, new_tasks: int) -> None:
    """Refuse (429) a run of ``new_tasks`` first tasks past the owner's limits or rate; else take its token."""
    check_unfinished(session, owner, new_tasks)
    wait = take_token(owner.id)
    if wait > 0:
        per_minute = get_settings().run_rate_per_minute
        raise RateLimited(f"owner {owner.name!r} starts runs faster than {per_minute:g} a minute (after a burst "
                          f"of {get_settings().run_burst}); try again in {math.ceil(wait)} s", wait)
