"""A one-call reader for the common subscription, beside the checked streaming one.

Why: a leader reads one subscription per member per rebalance, and the streaming reader
(``protocol._read.Reader``) pays a Python call, a ``try`` and a bound check per value so that
a hostile payload is refused before its elements are allocated. At Kafka's ManyThreadsPerClient
point (10,000 consumers, 2,000 of them reporting a task) that was the leader's largest step
after the assignment. Here msgpack reads the whole tree of a payload of at most
``FAST_MAX_BYTES`` in one C call and the shape is checked afterwards; what that one call may
allocate whatever the bytes declare (about 4 MB at most) is ``protocol._read.read_whole``'s
bound.

This reader accepts only what the streaming reader accepts, and builds the same message: every
check below is one of ``protocol._subscription_format.decode``'s. Anything else it does not
judge: a payload it does not recognise (an older or newer version, a named topology, client
tags not written in msgpack's shortest forms, a new endpoint, any malformed value) makes it
answer ``None``, and the streaming reader
then reads the payload and accepts it or names what is wrong, exactly as before
(``tests/protocol/test_subscription_fast.py`` compares both on drawn and mutated payloads).
"""

from __future__ import annotations

from itertools import accumulate, islice
from typing import Final, cast

import msgpack

from protocol._limits import MAX_CLIENT_TAGS, MAX_OFFSET_SUMS, MAX_STRING_BYTES, PROCESS_ID_BYTES
from protocol._read import (
    KIND_SUBSCRIPTION,
    ONE_CALL_MAX_BYTES,
    ONE_CALL_UNCOUNTED_BYTES,
    interned_hosts,
    interned_process_ids,
    interned_ranked_tasks,
    interned_tasks,
    process_id,
    read_whole,
)
from protocol._trusted import (
    all_fields_set,
)
from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, trusted_model
from protocol.messages import HEADER_ERROR_CODE_VERSION, SubscriptionInfo

#: Largest payload read in one call: at most this many values, whatever the bytes declare.
#: A subscription of 1,000 offset sums takes about 5,000 bytes.
FAST_MAX_BYTES: Final = ONE_CALL_MAX_BYTES

#: Field count per version this reader handles (``_subscription_format.FIELDS``).
_FIELDS: Final = {3: 11, 4: 11}
_ERROR_CODES: Final = {int(code): code for code in AssignorError}
_GROUP_INSTANCE_ID_CHARS: Final = 249
#: the reader's shared tables (cleared in place when they grow, never replaced): looked up here
#: without a call each
_HOSTS: Final = interned_hosts()
_PROCESS_IDS: Final = interned_process_ids()
_TASKS: Final = interned_tasks()
_RANKED: Final = interned_ranked_tasks()
#: the fields a validated message counts as given (all): ``trusted_model``'s shared set
_ALL_FIELDS: Final = all_fields_set(SubscriptionInfo)


def decode_fast(raw: bytes, latest_supported: int) -> SubscriptionInfo | None:
    """The subscription in ``raw``, or ``None`` when the streaming reader must decide.

    Written as one frame, its checks inline: at 1,000 threads per client a leader reads 2,000
    distinct subscriptions of one task each, and the calls per field cost more than the
    checks (``tests/protocol/test_subscription_fast.py`` holds it to the streaming reader).
    """
    items = read_whole(raw, max_bin_len=PROCESS_ID_BYTES, max_map_len=MAX_CLIENT_TAGS)
    if type(items) is not list or len(items) < 3:
        return None
    version, latest, kind = items[0], items[1], items[2]
    if (
        kind != KIND_SUBSCRIPTION
        or type(kind) is not int
        or type(version) is not int
        or type(latest) is not int
        or version not in _FIELDS
        or version > latest_supported
        or not version <= latest <= INT32_MAX
        or len(items) != _FIELDS[version]
    ):
        return None
    if version >= HEADER_ERROR_CODE_VERSION:
        code, pid, endpoint, groups, unique, tags, rack, instance = items[3:]
    else:
        pid, endpoint, groups, unique, code, tags, rack, instance = items[3:]
    error = _ERROR_CODES.get(code) if type(code) is int else None
    if (
        error is None
        or type(pid) is not bytes
        or len(pid) != PROCESS_ID_BYTES
        or type(unique) is not int
        or not 0 <= unique <= 255
        or type(tags) is not dict  # (at most MAX_CLIENT_TAGS entries: read_whole's limit)
        or (tags and not _plain_tags(raw, tags, rack, instance))
        or type(groups) is not list
        # optional texts: the rack and the group instance id
        or not (rack is None or (type(rack) is str and 0 < len(rack) <= MAX_STRING_BYTES))
        or not (
            instance is None
            or (type(instance) is str and 0 < len(instance) <= _GROUP_INSTANCE_ID_CHARS)
        )
    ):
        return None
    host = None
    if endpoint is not None:
        # A known endpoint only (the streaming reader checks and keeps a new one).
        if type(endpoint) is not list or len(endpoint) != 2:
            return None
        name, port = endpoint
        if type(name) is not str or type(port) is not int:
            return None
        host = _HOSTS.get((name, port))
        if host is None:
            return None
    if groups:
        sums = _offset_sums(groups)
        if sums is None:
            return None
    else:  # no local state: the idle consumers of a process
        sums = {}
    process = _PROCESS_IDS.get(pid)
    if process is None:
        process = process_id(pid)
    return trusted_model(
        SubscriptionInfo,
        {
            "version": version,
            "latest_supported_version": latest,
            "process_id": process,
            "user_endpoint": host,
            "task_offset_sums": sums,
            "unique_field": unique,
            "error_code": error,
            "client_tags": tags,
            "rack_id": rack,
            "group_instance_id": instance,
        },
    )


_PACK_TAIL = msgpack.Packer(use_bin_type=True).pack


def _plain_tags(raw: bytes, tags: dict[object, object], rack: object, instance: object) -> bool:
    """Whether ``tags`` (read from ``raw``'s third field from the end) are client tags the
    streaming reader accepts as they are: non-empty string keys, string values, and each key
    once in the bytes. msgpack keeps the last of repeated keys silently, where the streaming
    reader refuses the payload; the map's own bytes tell: written again (msgpack's shortest
    forms, as every writer of this project writes them) with the last two fields, they must
    be exactly ``raw``'s end, so the map held as many entries as ``tags`` has keys. A payload
    written otherwise (a longer form of a string) is left to the streaming reader.

    Why: every member of a rack-aware group sends tags (every simulated process does), and the
    streaming reader's call per value was 4-5 % of a simulator replay."""
    for key, value in tags.items():
        if type(key) is not str or not key or type(value) is not str:
            return False
    try:
        tail = _PACK_TAIL(tags) + _PACK_TAIL(rack) + _PACK_TAIL(instance)
    except Exception:  # (values msgpack has just read pack again; refused all the same)
        return False
    return raw.endswith(tail)


def _offset_sums(groups: list[object]) -> dict[object, int] | None:
    """Unnamed groups ``[None, subtopology, delta, sum, ...]`` checked as the streaming
    reader checks them; ``None`` for anything else (a named topology included)."""
    if len(groups) == 1:  # one task of one subtopology (a busy thread's report), checked inline
        group = groups[0]
        if type(group) is list and len(group) == 4 and group[0] is None:
            _, subtopology, partition, offset_sum = group
            if (
                type(subtopology) is int
                and 0 <= subtopology <= INT32_MAX
                and type(partition) is int
                and 0 <= partition <= INT32_MAX
                and type(offset_sum) is int
                and (offset_sum >= 0 or offset_sum == -2 or offset_sum == -3)
                and offset_sum <= INT64_MAX
            ):
                task = _TASKS.get((subtopology, partition, None))
                return None if task is None else {task: offset_sum}
        # anything else: the loop below accepts or refuses it
    sums: dict[object, int] = {}
    known = _TASKS
    seen: set[int] = set()
    for group in groups:
        if type(group) is not list:
            return None
        length = len(group)
        if length < 4 or length % 2 or group[0] is not None:
            return None
        subtopology = group[1]
        if type(subtopology) is not int or not 0 <= subtopology <= INT32_MAX:
            return None
        if subtopology in seen:
            return None
        seen.add(subtopology)
        if length > _LONG_GROUP:
            if not _long_group(group, subtopology, sums):
                return None
            continue
        partition = -1
        for at in range(2, length, 2):
            step = group[at]
            offset_sum = group[at + 1]
            if type(step) is not int or step < (0 if partition < 0 else 1):
                return None
            partition = step if partition < 0 else partition + step
            if (
                partition > INT32_MAX
                or type(offset_sum) is not int
                or not (offset_sum >= 0 or offset_sum == -2 or offset_sum == -3)
                or offset_sum > INT64_MAX
            ):
                return None
            task = known.get((subtopology, partition, None))
            if task is None:  # a task this process has not seen yet: the streaming reader's
                return None
            sums[task] = offset_sum
    if len(sums) > MAX_OFFSET_SUMS:
        return None
    return sums


#: Longest group (head and pairs) checked pair by pair; a longer one is checked in C
#: (:func:`_long_group`), whose fixed cost outweighs the loop's for a few pairs.
_LONG_GROUP: Final = 2 + 2 * 8


def _long_group(group: list[object], subtopology: int, sums: dict[object, int]) -> bool:
    """The loop of :func:`_offset_sums` over one long group ``[None, subtopology, delta,
    sum, ...]``, its checks over the whole group in C, the group's tasks stored in ``sums``;
    ``False`` where the loop answers ``None``.

    Why: a process reports every task it has state for, and in the simulator's groups a
    member's report runs to 512 pairs; checked pair by pair that was most of its read.
    The checks are the loop's: all ints; the first delta >= 0, the others >= 1 (so the
    partitions strictly increase and the last is the largest, at most INT32_MAX); every sum
    -2, -3 or within 0..INT64_MAX; every task already known."""
    if set(map(type, group[2:])) != {int}:
        return False
    values = cast(list[int], group[2:])
    steps = values[0::2]
    offset_sums = values[1::2]
    if steps[0] < 0 or min(islice(steps, 1, None)) < 1:
        return False
    # the tasks' ranks (``subtopology << 31 | partition``: the partitions, summed in C from
    # the subtopology's base), found by int in the rank table, no (s, p, None) key made each
    base = subtopology << 31
    ranks = list(accumulate(steps, initial=base))
    if ranks[-1] - base > INT32_MAX or max(offset_sums) > INT64_MAX:
        return False
    # the only negative sums are -2 (running) and -3 (unknown): at least -3, never -1
    lowest = min(offset_sums)
    if lowest < 0 and (lowest < -3 or -1 in offset_sums):
        return False
    # A task this process has not seen yet (the streaming reader's) is stored under ``None``,
    # found by one look-up rather than a scan; the read is then refused, ``sums`` with it.
    sums.update(zip(map(_RANKED.get, islice(ranks, 1, None)), offset_sums, strict=True))
    return None not in sums


#: msgpack's reader with its own limits (see :func:`_section`)
_UNPACK: Final = msgpack.unpackb


def _section(section: bytes) -> object | None:
    """The offset sums section of a payload that fits a template, read as :func:`read_whole`
    reads it, or ``None`` (the payload is then read whole).

    A short section (at most ``ONE_CALL_UNCOUNTED_BYTES``: a busy consumer's one or two tasks)
    is read with msgpack's own limits, which are the section's length: what it may allocate is
    bounded as :func:`read_whole`'s is, and what :func:`read_whole`'s tighter limits refuse
    (maps, binaries, strings, extension types) :func:`_offset_sums` refuses as it reads only
    lists, ``None`` and ints. Why: the call with the limits as keywords cost nearly twice as
    much as the read itself (callgrind, Kafka's ManyThreadsPerClient point: 1,800 such
    sections per rebalance)."""
    if len(section) > ONE_CALL_UNCOUNTED_BYTES:
        return read_whole(section, max_bin_len=PROCESS_ID_BYTES)
    try:
        tree: object = _UNPACK(section)
    except Exception:  # truncated, trailing bytes...: read whole, refused or not there
        return None
    return tree


__all__ = ["FAST_MAX_BYTES", "decode_fast"]
