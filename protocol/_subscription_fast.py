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

from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate, islice, repeat
from operator import is_, itemgetter
from typing import Final, TypeAlias, cast

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
    new_instance,
    set_extra,
    set_fields_set,
    set_model_dict,
    set_private,
)
from protocol.errors import AssignorError
from protocol.ids import INT32_MAX, INT64_MAX, trusted_model
from protocol.messages import HEADER_ERROR_CODE_VERSION, SubscriptionInfo, VersionHeader

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


#: What a :class:`TemplateReader` answers: ``None`` only where its ``otherwise`` does.
Read: TypeAlias = SubscriptionInfo | VersionHeader | None

#: Most distinct lengths of the part before the offset sums a reader keeps templates for (the
#: processes of one group mostly share one: same id size, endpoints of similar names).
MAX_TEMPLATE_PREFIX_LENGTHS: Final = 8
#: Fields before the offset sums per version (``_subscription_format``'s field order).
_BEFORE_SUMS: Final = {3: 5, 4: 6}


#: A template: the exact bytes before a payload's offset sums, those after them, and the
#: payload's fields (all of them, in the model's order).
_Template: TypeAlias = tuple[bytes, bytes, dict[str, object]]
#: Fewest payloads of one template read together by :func:`_read_run` (fewer: one at a time,
#: which costs less than the run's fixed steps).
_RUN: Final = 4
_HEADS = itemgetter(0)
#: the longest section :func:`_section` reads with msgpack's own limits
_SHORT_SECTION: Final = ONE_CALL_UNCOUNTED_BYTES


class _Raised:
    """A read that raised, kept in its place until the payloads before it are yielded."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def _read_run(raws: list[bytes], known: _Template) -> list[SubscriptionInfo | None]:
    """The payloads ``raws``, which all fit ``known``, read from it together where their
    offset sums are none or a busy consumer's report of one task of an unnamed subtopology
    (``[]``, ``[[None, subtopology, partition, sum]]``); ``None`` in the place of any other
    (the caller reads it one at a time, which accepts, refuses or reads it whole exactly as
    before). Every check of :meth:`TemplateReader._read_one` for those shapes
    (:func:`_section`'s read within msgpack's own limits, :func:`_offset_sums`' one-task
    checks) is made over the whole run in C; each message is then built as ``_read_one``
    builds it (:func:`_message`).

    Why: at Kafka's ManyThreadsPerClient point the second rebalance's leader reads 2,000 such
    payloads (10 processes' consumers, interleaved in member order), and checking each in
    Python was a third of its read (2,010 distinct payloads: 11.1 -> 9.7 ms)."""
    read: list[SubscriptionInfo | None] = [None] * len(raws)
    prefix, suffix, fields = known
    cut = itemgetter(slice(len(prefix), -len(suffix) if suffix else None))
    sections = list(map(cut, raws))
    # (an empty section is a payload no longer than its template's ends: read one at a time)
    if not all(sections) or max(map(len, cast(list[bytes], sections))) > _SHORT_SECTION:
        return read
    try:
        trees = list(map(_UNPACK, sections))
    except Exception:  # truncated, trailing bytes...: one at a time
        return read
    readable = [at for at, tree in enumerate(trees) if type(tree) is list and not tree]
    sums: list[dict[object, int]] = [{} for _ in readable]
    busy = [at for at, tree in enumerate(trees) if type(tree) is list and len(tree) == 1]
    task_sums = _one_task_sums(list(map(_HEADS, map(trees.__getitem__, busy))))
    if task_sums is not None:
        readable += busy
        sums += task_sums
    # one call per message: ``map`` over the slots' setters and ``dict.__setitem__`` took
    # longer (each such call through a wrapper object builds an argument tuple)
    for at, offset_sums in zip(readable, sums, strict=True):
        read[at] = _message(fields, offset_sums)
    return read


def _message(fields: dict[str, object], offset_sums: dict[object, int]) -> SubscriptionInfo:
    """A template's message with a payload's own offset sums: the template's fields in the
    model's order (a dict cloned in C), the sums and a fresh map of tags stored in place;
    ``trusted_model``'s steps without its call, as every field is there."""
    values = fields.copy()
    values["task_offset_sums"] = offset_sums
    values["client_tags"] = {}
    message: SubscriptionInfo = new_instance(SubscriptionInfo)
    set_model_dict(message, values)
    set_fields_set(message, _ALL_FIELDS)
    set_extra(message, None)
    set_private(message, None)
    return message


def _one_task_sums(groups: list[object]) -> list[dict[object, int]] | None:
    """Each of ``groups`` (``[None, subtopology, partition, sum]``) as :func:`_offset_sums`
    reads a one-group report, the checks made over all of them in C; ``None`` if any fails
    one (each is then read alone)."""
    if not groups:
        return []
    if set(map(type, groups)) != {list}:
        return None
    lists = cast(list[list[object]], groups)
    if set(map(len, lists)) != {4}:
        return None
    heads, subtopologies, partitions, offset_sums = zip(*lists, strict=True)
    if not all(map(is_, heads, repeat(None))):
        return None
    if set(map(type, subtopologies + partitions + offset_sums)) != {int}:
        return None
    numbers = cast(tuple[int, ...], subtopologies + partitions)
    offsets = cast(tuple[int, ...], offset_sums)
    if min(numbers) < 0 or max(numbers) > INT32_MAX or max(offsets) > INT64_MAX:
        return None
    # the only negative sums are -2 (running) and -3 (unknown): at least -3, never -1
    lowest = min(offsets)
    if lowest < 0 and (lowest < -3 or -1 in offsets):
        return None
    tasks = list(map(_TASKS.get, zip(subtopologies, partitions, repeat(None), strict=False)))
    if any(map(is_, tasks, repeat(None))):  # a task this process has not seen yet
        return None
    return [{task: offset_sum} for task, offset_sum in zip(tasks, offsets, strict=True)]


class TemplateReader:
    """:func:`decode_fast` for many payloads of one rebalance that differ only in their offset
    sums: the consumers of one process send the same bytes but for the tasks each reports.

    Why: at Kafka's ManyThreadsPerClient point a leader reads 2,000 distinct subscriptions
    whose header, process id, endpoint and tail are their process's; checking all of it again
    per payload was most of the read. Each payload read whole is kept as a template: the
    exact bytes before its offset sums, and those after them. A later payload that starts and
    ends with exactly those bytes is that payload with other sums in between. msgpack needs no
    look-ahead and the bytes before the sums end where a value ends, so the payload parses as
    the template's fields with the in-between value as its sums, provided that value is one
    complete msgpack value: it is read with :func:`read_whole`'s limits (no trailing bytes)
    and checked as :func:`decode_fast` checks sums. Everything but the sums is the
    template's, checked when it was read. The key is the exact bytes: a member's payload can
    only reuse what its own bytes repeat.
    """

    __slots__ = ("_last", "_latest", "_lengths", "_otherwise", "_seen", "_templates")

    def __init__(
        self, latest_supported: int, otherwise: Callable[[bytes], Read] = lambda raw: None
    ) -> None:
        self._latest = latest_supported
        # what a payload that is not bytes, or that :func:`decode_fast` does not judge, reads
        # as: the codec's streaming read, answered from here rather than through a second
        # call per payload (1,809 payloads at ManyThreadsPerClient's second rebalance)
        self._otherwise = otherwise
        # the processes read whole once (by the shared instance's id): a payload becomes a
        # template only when its process sends a second, so a group of one consumer per
        # process (1,000 processes) pays no template it would never use
        self._seen: set[int] = set()
        self._lengths: list[int] = []  # distinct prefix lengths, most recent last
        # prefix bytes -> (them, suffix bytes, the template's fields: all, in the model's order)
        self._templates: dict[bytes, _Template] = {}
        self._last: _Template | None = None  # the last that fit

    def read(self, raw: bytes) -> Read:
        """``decode_fast(raw, latest_supported)``, from a template when one fits; where that
        is ``None`` (or ``raw`` is not bytes), what ``otherwise`` reads."""
        return next(self.read_many((raw,)))

    def read_many(self, payloads: Iterable[bytes]) -> Iterator[Read]:
        """:meth:`read` of each of ``payloads``, in order, in one frame: at Kafka's
        ManyThreadsPerClient point a leader reads 2,000 payloads from templates, and a call
        per payload cost a fifth of each read.

        The payloads that fit a template are set aside by template and read together
        (:func:`_read_run`): the consumers of different processes come interleaved (member ids
        sorted), so a process's payloads are rarely neighbours. A payload that cannot be read
        raises at its place, after those before it were yielded; none after it is read."""
        listed = payloads if type(payloads) is list else list(payloads)
        read: list[Read | _Raised] = [None] * len(listed)
        waiting: dict[bytes, tuple[_Template, list[int]]] = {}  # by the template's prefix
        end = len(listed)
        templates = self._templates
        lengths = self._lengths
        known = self._last
        for at, raw in enumerate(listed):
            # The template that fit last, checked in place first (its process's payloads
            # often come together). Any template whose bytes begin ``raw`` parses it the same
            # (msgpack's fields end where they end), so this is the one the look-up by prefix
            # would find.
            if type(raw) is bytes and len(raw) <= FAST_MAX_BYTES:
                if known is None or not raw.startswith(known[0]):
                    for length in lengths:
                        known = templates.get(raw[:length])
                        if known is not None:
                            break
                if known is not None and raw.endswith(known[1]):
                    run = waiting.get(known[0])
                    if run is None:
                        waiting[known[0]] = (known, [at])
                    else:
                        run[1].append(at)
                    continue
            try:
                read[at] = self._read_whole(raw)
            except Exception as exc:  # raised at its place, below, once those before are read
                read[at] = _Raised(exc)
                end = at + 1
                break
        self._last = known
        for known, ats in waiting.values():
            self._read_from_template(known, ats, listed, read)
        for answer in islice(read, end):
            if type(answer) is _Raised:
                raise answer.error
            yield cast(Read, answer)

    def _read_from_template(
        self, known: _Template, ats: list[int], listed: list[bytes], read: list[Read | _Raised]
    ) -> None:
        """Store in ``read`` the answers for the payloads at ``ats``, which fit ``known``: those
        :func:`_read_run` reads together, the others one at a time."""
        raws = list(map(listed.__getitem__, ats))
        together = _read_run(raws, known) if len(raws) >= _RUN else repeat(None)
        for at, raw, message in zip(ats, raws, together, strict=False):
            if message is not None:
                read[at] = message
                continue
            try:
                read[at] = self._read_one(raw, known)
            except Exception as exc:  # raised at its place by ``read_many``
                read[at] = _Raised(exc)

    def _read_one(self, raw: bytes, known: _Template) -> Read:
        """``raw``, which fits ``known``, read from it: the payload is the template's with the
        in-between bytes as its offset sums, provided they are one complete msgpack value
        that reads as sums (:func:`_section`, :func:`_offset_sums`); else read whole."""
        prefix, suffix, fields = known
        end = len(raw) - len(suffix)
        if end > len(prefix) and type(groups := _section(raw[len(prefix) : end])) is list:
            sums = _offset_sums(groups) if groups else {}
            if sums is not None:
                return _message(fields, sums)
        return self._read_whole(raw)

    def _read_whole(self, raw: bytes) -> Read:
        """``raw`` read without a template (kept as one if its process sent one before)."""
        if type(raw) is not bytes:
            return self._otherwise(raw)
        info = decode_fast(raw, self._latest)
        if info is None:
            return self._otherwise(raw)
        process = id(info.process_id)
        if process in self._seen:
            self._learn(raw, info)
        else:
            self._seen.add(process)
        return info

    def _learn(self, raw: bytes, info: SubscriptionInfo) -> None:
        """Keep ``raw`` (read whole as ``info``) as a template."""
        if info.client_tags:  # (the fast reader reads none; kept as a fresh dict above)
            return
        unpacker = msgpack.Unpacker(max_buffer_size=len(raw))
        unpacker.feed(raw)
        unpacker.read_array_header()
        for _ in range(_BEFORE_SUMS[info.version]):
            unpacker.skip()
        start = unpacker.tell()
        unpacker.skip()
        end = unpacker.tell()
        lengths = self._lengths
        if start not in lengths:
            if len(lengths) >= MAX_TEMPLATE_PREFIX_LENGTHS:
                return
            lengths.append(start)
        prefix = raw[:start]
        self._templates[prefix] = (prefix, raw[end:], dict(vars(info)))


__all__ = ["FAST_MAX_BYTES", "MAX_TEMPLATE_PREFIX_LENGTHS", "TemplateReader", "decode_fast"]
