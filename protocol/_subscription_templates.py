"""Many subscriptions of one rebalance read from templates: the consumers of one process send
the same bytes but for the offset sums each reports (``protocol._subscription_fast`` reads a
payload alone; this module reads the repeats of one it has read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice, repeat
from operator import is_, itemgetter
from typing import Final, TypeAlias, cast

import msgpack

from protocol._read import ONE_CALL_UNCOUNTED_BYTES
from protocol._subscription_fast import (
    _ALL_FIELDS,
    _TASKS,
    _UNPACK,
    FAST_MAX_BYTES,
    _offset_sums,
    _section,
    decode_fast,
)
from protocol._trusted import new_instance, set_extra, set_fields_set, set_model_dict, set_private
from protocol.ids import INT32_MAX, INT64_MAX
from protocol.messages import SubscriptionInfo, VersionHeader

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


__all__ = ["MAX_TEMPLATE_PREFIX_LENGTHS", "TemplateReader"]
