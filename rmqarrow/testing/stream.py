"""A realistic, reproducible message stream for the demo (and for tests).

Shaped like a small shop's broker traffic: ``orders`` (key ``ORD-nnnnnn``, often with the
customer ``CUST-nnnn``), ``payments`` and ``shipping`` (their own id plus the order id, so
one order key is indexed under several topics), ``inventory`` (``SKU-nnnnn``) and
``audit`` (no KEYS).  Every message has a RocketMQ-style UNIQ_KEY (32 hex digits); a few
KEYS values carry double or trailing spaces (no empty keys are indexed).  About 0.5 % of
the messages are transaction rollbacks (not indexed) and 0.5 % prepared; about 0.5 % are
stored with a time up to two minutes *earlier* than the message before them (a broker
clock step after failover): these out-of-order store times are what makes the native
chained lookup differ from a plain "hash equal and time in range" filter.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["DEMO_START_MS", "DemoMessage", "demo_messages"]

#: 2026-01-15 09:00:00 UTC
DEMO_START_MS = 1_768_467_600_000
TOPICS = ("orders", "payments", "shipping", "inventory", "audit")
_WEIGHTS = (40, 25, 15, 15, 5)
SYS_FLAG_PREPARED = 0x4
SYS_FLAG_ROLLBACK = 0xC


@dataclass(frozen=True)
class DemoMessage:
    topic: str
    keys: str | None
    uniq_key: str | None
    store_timestamp: int
    born_timestamp: int
    sys_flag: int
    tags: str
    body: bytes
    out_of_order: bool = False


def demo_messages(n: int, *, seed: int = 42, span_ms: int = 2 * 3_600_000) -> Iterator[DemoMessage]:
    """``n`` messages over about ``span_ms`` of store time (deterministic for a seed)."""
    rng = random.Random(seed)
    step = max(span_ms // max(n, 1), 1)
    t = DEMO_START_MS
    orders = 0
    prefix = f"AC11{rng.getrandbits(32):08X}2A9F"
    for i in range(n):
        t += rng.randint(0, 2 * step)
        stored = t
        late = rng.random() < 0.005 and i > 10
        if late:
            stored = t - rng.randint(5_000, 120_000)  # a clock step back
        topic = rng.choices(TOPICS, _WEIGHTS)[0]
        tags = "created"
        if topic == "orders":
            orders += 1
            keys: str | None = f"ORD-{orders:06d}"
            if rng.random() < 0.6:
                keys = f"ORD-{orders:06d} CUST-{rng.randint(1, 400):04d}"
        elif topic in ("payments", "shipping"):
            order = rng.randint(max(1, orders - 50), max(orders, 1))
            own = "PAY" if topic == "payments" else "SHP"
            keys = f"{own}-{i:07d} ORD-{order:06d}"
            tags = "captured" if topic == "payments" else "dispatched"
        elif topic == "inventory":
            keys = f"SKU-{rng.randint(1, 2000):05d}"
            tags = "adjusted"
        else:
            keys = None
            tags = "audit"
        if keys is not None and rng.random() < 0.02:
            keys = keys.replace(" ", "  ") + " "  # odd spacing: no empty keys indexed
        roll = rng.random()
        sys_flag = SYS_FLAG_ROLLBACK if roll < 0.005 else SYS_FLAG_PREPARED if roll < 0.01 else 0
        uniq = None if rng.random() < 0.01 else f"{prefix}{i:016X}"
        body = (
            f'{{"seq":{i},"topic":"{topic}","keys":"{keys or ""}",'
            f'"pad":"{"x" * rng.randint(20, 300)}"}}'
        ).encode()
        yield DemoMessage(
            topic, keys, uniq, stored, t - rng.randint(0, 50), sys_flag, tags, body, late
        )
