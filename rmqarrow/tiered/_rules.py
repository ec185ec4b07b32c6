"""Every rule of RocketMQ's tiered index (``IndexStoreFile``), in one place.

Read off RocketMQ's sources (tieredstore, RIP-65) and confirmed by the golden fixtures in
``tests/golden/tiered`` (RocketMQ's own classes wrote them).  Where this list and the code
disagree, the code is wrong.

Keys and slots

1. **Key string.** ``topic + "#" + key``: topic ``T#x`` with key ``y`` equals topic ``T``
   with key ``x#y``.  The empty key indexes ``topic#``.
2. **Hash.** Java ``String.hashCode()`` of the key string, negated when negative.  Negating
   ``Integer.MIN_VALUE`` overflows, so that hash stays ``-2**31`` (the classic IndexFile maps
   it to 0; this one does not).
3. **Slot.** ``hash % S`` with Java's remainder: in ``[0, S)`` except for ``MIN_VALUE``,
   whose slot is ``-(2**31 mod S)``: 0 when ``S`` divides ``2**31``, else negative.  The slot
   position ``28 + 8*slot`` is then negative (reads fail) or, when ``2**31 mod S`` is 1, 2
   or 3, inside the header (offsets 20, 12, 4).
4. **Time.** ``timeDiff = (int)((storeTimestamp - beginTimestamp) / 1000)``: 64-bit wrapping
   subtraction, division truncated toward zero (-1,500 ms gives -1), low 32 bits kept.
   Queries compare ``timeDiff * 1000 + beginTimestamp`` (64-bit wrap), whole seconds from
   the file's begin, never the store time put.
5. **Begin timestamp** is the value the file was created with (IndexStoreService passes the
   wall clock), also the file's name; not the first message's time.  On (re)open it is
   taken from the file *name*.

putKey (checked in this order, each returns at once)

6. Blank topic (``StringUtils.isBlank``: empty or all Java whitespace) -> ``UNKNOWN_ERROR``,
   nothing written, whatever the file's state.
7. Empty key set -> ``SUCCESS``, nothing written (also on a full or sealed file).
8. File not UNSEALED -> ``FILE_FULL``.
9. ``itemCount + len(keys) >= N`` -> the file turns SEALED for good and ``FILE_FULL``,
   nothing written: capacity is ``N - 1`` items, and a multi-key put that does not fit seals
   the file even if a smaller put would still fit (**early sealing**).
10. Then per key, in the set's iteration order: read ``old = max(int32 at slot, 0)`` (a
    negative slot position throws: ``UNKNOWN_ERROR``, the keys before it stay written);
    ``itemCount += 1``; write the item with ``next = old``; write ``itemCount`` at the slot;
    if ``old <= 0`` then ``hashSlotCount += 1``; ``endTimestamp = max(endTimestamp,
    storeTimestamp)``; rewrite the whole header.  A header-slot (rule 3) write is thus
    overwritten at once, and its item is reachable from no slot.
11. **Header magic** is ``END`` exactly when ``itemCount == N - 1``, else ``BEGIN``.
12. **Reopen** (constructing the file object on an existing file) takes the begin timestamp
    from the name, hashSlotCount and itemCount from the header, but the end timestamp from
    offset **4** (the stored begin timestamp), rewrites the header and is UNSEALED again:
    the end timestamp is **reset** until a later put raises it.  An upload then keeps the
    wrong value in the compacted header and as the segment's end time, by which RocketMQ
    expires index segments (queries never read it).  ``check`` notes a header whose end
    timestamp its newest item contradicts (rule 4 run backwards: :func:`store_time_bounds`).

Query on the local file (UNSEALED or SEALED)

13. Slot value ``v = max(int32 at slot, 0)``; an unreadable (negative) slot position gives
    an empty answer, never an error.  No ``begin > end`` check.
14. **512-step walk cap**: at most 512 items are read along ``next`` while
    ``0 < v <= itemCount``; matching or not, each read uses a step.
15. An item matches when its hashCode equals the hash (key text and topicId are never
    compared: ``Aa``/``BB`` both match) and ``begin <= time <= end`` (rule 4).
16. **maxCount + 1**: the walk stops only once it holds *more than* ``maxCount`` items, so up
    to ``maxCount + 1`` come back (one for ``maxCount <= 0``), newest first, ``next`` as
    ``next_index``.
17. *Beyond RocketMQ:* a damaged file can hold a cycle in ``next``; rmqarrow ends the walk
    the moment it would revisit an item (RocketMQ would return the cycle's items again
    until the 512 steps are used).

Compaction (``doCompaction``)

18. Output ``28 + 8*S + 28*itemCount`` bytes at most.  For each slot ``i`` in order: copy
    the first 28 bytes (all but ``next``) of each chain item, newest first, while ``v > 0``
    and the write position is inside the buffer (no 512 cap); slot ``i`` becomes
    (start position, byte length); an empty slot gets (current position, 0).
19. Header: magic ``END`` always, then begin, end, hashSlotCount, itemCount.
20. The result ends after the last item written: no item at all gives **zero bytes**;
    items reachable from no slot (rule 10) are dropped.  The file turns SEALED.
21. *Beyond RocketMQ:* a chain pointer at or past ``N`` (RocketMQ: compaction fails) or an
    item reached twice (damage; RocketMQ would copy the cycle until the buffer is full)
    raises :class:`~rmqarrow.errors.CorruptIndexError`.

Query on the compacted file (UPLOAD)

22. Begin/end timestamps are the segment's min/max timestamps (the local file's begin/end,
    also in the compacted header); ``S`` comes from the configuration.
23. A segment of 28 bytes or fewer answers nothing.
24. Read 8 bytes at the slot position: a read starting at a negative position or at/after
    the end **fails** (``TieredStoreException``; here
    :class:`~rmqarrow.errors.TieredReadError`); one running past the end is shortened and
    fewer than 8 bytes answer nothing.
25. ``len = min(length, 28 * 1024)``: **only the first 1,024 items of a slot** are examined;
    ``position <= 0`` or ``len <= 0`` answer nothing; the item read follows rule 24 and a
    length that is not a multiple of 28 answers nothing.
26. Items match as in rule 15 and are kept while fewer than ``maxCount`` are held: at most
    ``maxCount`` (none for ``maxCount <= 0``), ``next_index`` 0.

Across files (``IndexStoreService``)

27. Local files live in ``tiered_index_file/`` named by begin timestamp (decimal digits
    only; ``compacting/`` and other names are ignored); uploaded segments replace the local
    file of the same begin timestamp.
28. A query with ``begin > end`` answers nothing; otherwise only files whose **begin
    timestamp** lies in ``[begin, end]`` are asked (a file begun before ``begin`` is skipped
    even when it holds matches, RocketMQ issue #10268), newest first, each with the same
    ``maxCount``; answers merge keyed by (queueId, offset) while fewer than ``maxCount`` are
    held, then are cut to ``maxCount``.  RocketMQ returns them in hash-map order; rmqarrow
    keeps first-seen order (deterministic).  If nothing was found and a file's read failed,
    the failure is raised.

Beyond RocketMQ: exact answers and recognising files

29. **Exact mode** (``exact=True``, ``--exact``): every matching item of the chain (local
    form: the whole chain, no 512-step cap, rule 17's cycle stop kept) or of the slot
    (compacted form: every item of the slot, no 1,024 cap), newest first, at most
    ``max_count`` (none for ``max_count <= 0``; never ``max_count + 1``).  A slot position
    outside the file answers nothing (no item can be stored there), never an error.  The
    two forms of one file then give the same items (``next_index`` aside).  RocketMQ's own
    answers differ between the forms wherever a cap binds (``maxCount + 1`` vs
    ``maxCount``, 512 steps vs 1,024 items) or a ``MIN_VALUE`` slot read fails;
    :func:`rmqarrow.tiered.form_differences` lists those queries.
30. **Recognising a file** (:func:`rmqarrow.format.detect.detect`): magic BEGIN or END at
    offset 0 (a classic IndexFile starts with a millisecond timestamp, whose high int32 is
    0).  A compacted file states its ``S`` itself: slot 0's position is always
    ``28 + 8*S`` (an empty slot gets the current position), and its size is then
    ``28 + 8*S + 28*k``.  A local file's ``S``/``N`` are not stored; rmqarrow takes the
    defaults when the size matches, else the geometry whose newest item sits at the head
    of its own slot, when exactly one does (else it asks for ``--hash-slot-num`` and
    ``--index-num``).
"""

from __future__ import annotations

from rmqarrow.format.hashing import java_string_hash
from rmqarrow.format.java import JAVA_INT_MIN as INT_MIN
from rmqarrow.format.java import java_div as trunc_div
from rmqarrow.format.java import java_int, java_long, java_rem
from rmqarrow.tiered.layout.binary import BEGIN_MAGIC, END_MAGIC, slot_position

from ._blank import is_blank

__all__ = [
    "COMPACT_MAX_ITEMS",
    "MAX_WALK_STEPS",
    "header_magic",
    "is_blank_topic",
    "key_hash",
    "key_slot_position",
    "store_time_bounds",
    "stored_time",
    "time_diff",
]

#: Rule 14: items read per local query.
MAX_WALK_STEPS = 512
#: Rule 25: items of a slot examined per compacted query.
COMPACT_MAX_ITEMS = 1024


def key_hash(topic: str, key: str) -> int:
    """Rules 1-2: the stored hashCode of ``key`` in ``topic`` (``MIN_VALUE`` stays negative)."""
    h = java_string_hash(f"{topic}#{key}")
    return h if h >= 0 or h == INT_MIN else -h


def key_slot_position(hash_code: int, hash_slot_num: int) -> int:
    """Rule 3: the byte position of the slot of ``hash_code`` (may be negative)."""
    return slot_position(java_rem(hash_code, hash_slot_num))


def time_diff(store_timestamp: int, begin_timestamp: int) -> int:
    """Rule 4: the stored whole seconds of ``store_timestamp`` from the file's begin."""
    return java_int(trunc_div(java_long(store_timestamp - begin_timestamp), 1000))


def stored_time(diff: int, begin_timestamp: int) -> int:
    """Rule 4: the time a query compares, ``timeDiff * 1000 + beginTimestamp`` (wrapping)."""
    return java_long(diff * 1000 + begin_timestamp)


def store_time_bounds(diff: int, begin_timestamp: int) -> tuple[int, int]:
    """Rule 4 backwards: the lowest and highest store time that ``diff`` can stand for.

    The division truncates toward zero, so a positive ``diff`` covers 999 ms after
    ``diff`` whole seconds, a negative one 999 ms before, and 0 both sides.
    """
    low = diff * 1000 - (999 if diff <= 0 else 0)
    high = diff * 1000 + (999 if diff >= 0 else 0)
    return begin_timestamp + low, begin_timestamp + high


def header_magic(item_count: int, index_num: int) -> int:
    """Rule 11: ``END`` when the file holds ``N - 1`` items, else ``BEGIN``."""
    return END_MAGIC if item_count + 1 == index_num else BEGIN_MAGIC


def is_blank_topic(topic: str) -> bool:
    """Rule 6."""
    return is_blank(topic)
