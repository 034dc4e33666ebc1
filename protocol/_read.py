"""Checked reading: a streaming msgpack reader, typed field checks, and shared id instances.

Everything here raises ``ProtocolError`` naming the field; nothing trusts a value's type, since
msgpack will happily hand back a bool where an int belongs or a list where a string does.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from itertools import repeat
from operator import is_
from typing import Final, NoReturn

import msgpack

from protocol._limits import (
    MAX_PAYLOAD_BYTES,
    MAX_QUOTE_CHARS,
    MAX_STRING_BYTES,
    PROCESS_ID_BYTES,
)
from protocol.errors import AssignorError, ProtocolError, shorten
from protocol.ids import (
    INT32_MAX,
    HostInfo,
    ProcessId,
    TaskId,
    TopicPartition,
    trusted_model,
    trusted_task_id,
    trusted_topic_partition,
)

#: Marker right after the two header integers: which message this is. The values are the ASCII
#: codes of 'S' and 'A' (one byte each as msgpack fixints), so a hex dump shows them.
KIND_SUBSCRIPTION: Final = 0x53
KIND_ASSIGNMENT: Final = 0x41
KIND_NAMES: Final = {KIND_SUBSCRIPTION: "subscription", KIND_ASSIGNMENT: "assignment"}
#: What the header's second integer means in each message.
SECOND_NAMES: Final = {
    KIND_SUBSCRIPTION: "latest_supported_version",
    KIND_ASSIGNMENT: "commonly_supported_version",
}

_ERROR_CODES: Final = {int(code): code for code in AssignorError}
_NIL: Final = 0xC0


def fail(field: str, problem: str) -> NoReturn:
    raise ProtocolError(field, problem)


def quote(value: object) -> str:
    """A received value as an error message shows it: ``repr`` of at most ``MAX_QUOTE_CHARS``.

    Containers are described, never printed: their repr would be as long as they are, and
    recursive for nested ones.
    """
    if isinstance(value, list | dict | tuple):
        return f"{'a map' if isinstance(value, dict) else 'an array'} of {len(value)} elements"
    return shorten(repr(value), MAX_QUOTE_CHARS)


def as_bytes(data: object) -> bytes:
    """Accept bytes-like payloads only, and only up to the size limit."""
    if isinstance(data, bytes):
        raw = data
    elif isinstance(data, bytearray | memoryview):
        raw = bytes(data)
    else:
        fail("payload", f"expected bytes, got {type(data).__name__}")
    if not raw:
        fail("payload", "is empty")
    if len(raw) > MAX_PAYLOAD_BYTES:
        fail("payload", f"{len(raw):,} bytes exceeds the limit of {MAX_PAYLOAD_BYTES:,} bytes")
    return raw


def _msgpack_type(first_byte: int) -> str:
    """What a msgpack value starting with ``first_byte`` is, for error messages."""
    if first_byte <= 0x7F or first_byte >= 0xE0 or 0xCC <= first_byte <= 0xD3:
        return "an integer"
    if first_byte <= 0x8F or first_byte in (0xDE, 0xDF):
        return "a map"
    if first_byte <= 0x9F or first_byte in (0xDC, 0xDD):
        return "an array"
    if first_byte <= 0xBF or 0xD9 <= first_byte <= 0xDB:
        return "a string"
    return _OTHER_TYPES.get(first_byte, "an extension type")


def _refused_type(exc: Exception) -> str:
    """What msgpack refused to read where a single value belongs, from its refusal.

    (Its position cannot tell: after a refusal msgpack has consumed a multi-byte header but not
    a one-byte one.)
    """
    if isinstance(exc, UnicodeDecodeError):
        return "a string that is not UTF-8"
    message = str(exc)
    for limit, what in _LIMIT_TYPES.items():
        if limit in message:
            return f"{what}, which the format does not have here"
    return "bytes that are not msgpack"


_LIMIT_TYPES: Final = {
    "max_array_len": "an array",
    "max_map_len": "a map",
    "max_str_len": "a string over the length limit",
    "max_bin_len": "binary data over the length limit",
    "max_ext_len": "an extension type",
}

_OTHER_TYPES: Final = {
    0xC0: "nil",
    0xC1: "the never-used byte 0xc1",
    0xC2: "a bool",
    0xC3: "a bool",
    0xC4: "binary",
    0xC5: "binary",
    0xC6: "binary",
    0xCA: "a float",
    0xCB: "a float",
}


#: Largest payload the one-call readers (``_subscription_fast``, ``_assignment_fast``) take.
ONE_CALL_MAX_BYTES: Final = 16 * 1024
#: Most bytes that may be msgpack's array16 / array32 markers in a payload read in one call.
#: msgpack allocates an array's declared length before it reads an element, so a payload of
#: nested long-array headers and no elements made it allocate about 80 MB from 16 KB. Only
#: those two headers declare more than 15 elements; with at most this many of them, each
#: declaring at most the payload's length, one call allocates at most about 4 MB of lists.
#: A payload with more such bytes (headers or data that happens to hold them) is left to the
#: streaming reader, which checks every declared length before allocating.
ONE_CALL_MAX_LONG_ARRAYS: Final = 32
#: Up to this size the bytes are not counted: with every array capped at the payload's length,
#: a payload of n bytes holds at most n / 3 long headers of n elements each, about 2.8 MB of
#: lists at 1 KiB; and a leader at 1,000 threads per client reads 10,000 payloads of ~100 bytes.
ONE_CALL_UNCOUNTED_BYTES: Final = 1024
_ARRAY16: Final = b"\xdc"
_ARRAY32: Final = b"\xdd"


def read_whole(raw: bytes, max_bin_len: int, max_map_len: int = 0) -> object | None:
    """``raw``'s whole tree in one msgpack call, or ``None`` for the streaming reader to judge.

    Why: the fast readers check a common message's shape after reading it, which only pays
    when the read is one C call; the same limits serve both (no maps, no extension types,
    strings of at most ``MAX_STRING_BYTES``, no array longer than the payload, few long
    arrays: see ``ONE_CALL_MAX_LONG_ARRAYS``), so they live here once. ``max_map_len``: maps
    of at most that many entries are read too (a subscription's client tags), which the caller
    checks itself, duplicate keys included (msgpack keeps the last of them silently).
    """
    size = len(raw)
    if size > ONE_CALL_MAX_BYTES or (
        size > ONE_CALL_UNCOUNTED_BYTES
        and raw.count(_ARRAY16) + raw.count(_ARRAY32) > ONE_CALL_MAX_LONG_ARRAYS
    ):
        return None
    try:
        tree: object = msgpack.unpackb(
            raw,
            raw=False,
            strict_map_key=True,
            max_str_len=MAX_STRING_BYTES,
            max_bin_len=max_bin_len,
            max_array_len=size,  # every element takes at least one byte
            max_map_len=max_map_len,  # 0: client tags are the streaming reader's to check
            max_ext_len=0,
        )
    except Exception:  # truncated, trailing bytes, bad UTF-8, a container over a limit...
        return None
    return tree


class Reader:
    """One payload, read front to back: containers by their headers, the rest value by value.

    msgpack's one-shot ``unpackb`` builds the whole tree before the codec sees any of it, so a
    field's limit could only be checked after its elements were paid for, and a value nested a
    thousand levels deep reached code that formats values recursively. Here the codec reads each
    container's header itself and checks the declared length against that field's own limit
    before reading an element, and ``value`` refuses any container (msgpack's ``max_array_len``
    and ``max_map_len`` are 0), so nothing nests deeper than the format does and the work is
    linear in the elements the limits allow. No recursion depends on the input.
    """

    __slots__ = ("_raw", "_unpack", "_unpacker")

    def __init__(self, raw: bytes) -> None:
        unpacker = msgpack.Unpacker(
            max_buffer_size=len(raw),
            raw=False,
            strict_map_key=True,
            max_str_len=MAX_STRING_BYTES,
            max_bin_len=PROCESS_ID_BYTES,
            max_array_len=0,  # an empty array is all ``value`` may return
            max_map_len=0,
            max_ext_len=0,
        )
        unpacker.feed(raw)
        self._raw = raw
        self._unpacker = unpacker
        self._unpack = unpacker.unpack

    def _refuse(self, field: str, exc: Exception) -> NoReturn:
        if isinstance(exc, msgpack.OutOfData):
            # The payload as a whole is at fault, wherever the cut fell.
            fail("payload", "is truncated" + ("" if field == "payload" else f" (in {field})"))
        fail(field, f"holds {_refused_type(exc)} ({shorten(str(exc), MAX_QUOTE_CHARS)})")

    def array(self, field: str, limit: int | None) -> int:
        """Read an array header and return its length, refused when it declares over ``limit``.

        ``None``: the caller checks the length against a budget of its own before reading on.
        """
        at = self._unpacker.tell()
        try:
            length: int = self._unpacker.read_array_header()
        except (msgpack.UnpackException, ValueError) as exc:
            if at < len(self._raw) and not isinstance(exc, msgpack.OutOfData):
                fail(field, f"expected an array, got {_msgpack_type(self._raw[at])}")
            self._refuse(field, exc)
        if limit is not None and length > limit:
            fail(field, f"declares {length:,} elements; at most {limit:,} are allowed")
        return length

    def map(self, field: str, limit: int) -> int:
        """Read a map header and return its size, refused when it declares over ``limit``."""
        at = self._unpacker.tell()
        try:
            size: int = self._unpacker.read_map_header()
        except (msgpack.UnpackException, ValueError) as exc:
            if at < len(self._raw) and not isinstance(exc, msgpack.OutOfData):
                fail(field, f"expected a map, got {_msgpack_type(self._raw[at])}")
            self._refuse(field, exc)
        if size > limit:
            fail(field, f"declares {size:,} entries; at most {limit:,} are allowed")
        return size

    def nil(self) -> bool:
        """Consume a nil if one comes next; say whether it did."""
        at = self._unpacker.tell()
        if at < len(self._raw) and self._raw[at] == _NIL:
            self._unpack()
            return True
        return False

    def value(self, field: str) -> object:
        """The next value, which must not be a container (empty ones aside): see the class."""
        try:
            return self._unpack()
        except (msgpack.UnpackException, ValueError) as exc:
            self._refuse(field, exc)

    def values(
        self, field: str, count: int, element: Callable[[int], str] | None = None
    ) -> list[object]:
        """The next ``count`` values (none a container): the elements of an array whose header
        was just read and checked. ``element(i)`` names the i-th one should it be refused."""
        read: list[object] = []
        append = read.append
        unpack = self._unpack
        try:
            for _ in range(count):
                append(unpack())
        except (msgpack.UnpackException, ValueError) as exc:
            self._refuse(field if element is None else element(len(read)), exc)
        return read

    def integer(self, field: str, low: int, high: int) -> int:
        return need_int(self.value(field), field, low, high)

    def text(self, field: str, max_len: int = MAX_STRING_BYTES) -> str:
        return need_str(self.value(field), field, max_len)

    def optional_text(self, field: str) -> str | None:
        return optional_str(self.value(field), field)

    def finish(self) -> None:
        """The message must end where its outer array does."""
        extra = len(self._raw) - self._unpacker.tell()
        if extra:
            fail("payload", f"has {extra:,} bytes after the message")


def read_header(reader: Reader) -> tuple[int, int, int, int]:
    """Read ``[version, second, kind, ...`` and return them with the top-level field count.

    This is all a reader can rely on in a version newer than its own, so it must not depend on
    anything after the kind marker.
    """
    length = reader.array("payload", None)  # checked against the version's field count
    if length < 3:
        fail("payload", f"has {length} top-level fields; at least 3 (the header) are required")
    version = reader.value("payload")
    second = reader.value("payload")
    kind = reader.value("payload")
    if type(kind) is not int or kind not in KIND_NAMES:
        fail(
            "kind",
            f"{quote(kind)} is neither {KIND_SUBSCRIPTION} (subscription) nor "
            f"{KIND_ASSIGNMENT} (assignment)",
        )
    second_name = SECOND_NAMES[kind]
    version = need_int(version, "version", 1, INT32_MAX)
    second = need_int(second, second_name, 1, INT32_MAX)
    if second < version:
        fail(second_name, f"{second} is older than the version {version} the payload is written in")
    return version, second, kind, length


def need_int(value: object, field: str, low: int, high: int) -> int:
    if type(value) is not int:
        fail(field, f"expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        fail(field, f"{value} is outside [{low}, {high}]")
    return value


def need_str(value: object, field: str, max_len: int = MAX_STRING_BYTES) -> str:
    if type(value) is not str:
        fail(field, f"expected a string, got {type(value).__name__}")
    if not value:
        fail(field, "is empty")
    if len(value) > max_len:
        fail(field, f"is {len(value):,} characters long; at most {max_len:,} are allowed")
    return value


def optional_str(value: object, field: str) -> str | None:
    return None if value is None else need_str(value, field)


def error_code(value: object) -> AssignorError:
    code = need_int(value, "error_code", 0, INT32_MAX)
    try:
        return _ERROR_CODES[code]
    except KeyError:
        fail("error_code", f"{code} is not a known AssignorError code")


def process_id(value: object) -> ProcessId:
    """A ``ProcessId`` from its 16 bytes; a process's id recurs in every subscription of its
    consumers and every rebalance, so instances are shared like tasks'."""
    if type(value) is not bytes or len(value) != PROCESS_ID_BYTES:
        fail("process_id", f"expected {PROCESS_ID_BYTES} raw bytes")
    known = _process_ids.get(value)
    if known is None:
        if len(_process_ids) >= _INTERN_LIMIT:
            _process_ids.clear()
        known = _process_ids[value] = trusted_model(ProcessId, {"uuid": uuid.UUID(bytes=value)})
    return known


def host_info(host: object, port: object, field: str) -> HostInfo:
    """A ``HostInfo`` after HostInfo's own checks; endpoints recur, so instances are shared."""
    if type(host) is str and type(port) is int:
        known = _hosts.get((host, port))
        if known is not None:
            return known
    name = need_str(host, f"{field}.host", 255)
    number = need_int(port, f"{field}.port", 0, 65535)
    if _WHITESPACE.search(name):
        fail(f"{field}.host", f"{quote(name)} contains whitespace")
    if len(_hosts) >= _INTERN_LIMIT:
        _hosts.clear()
    made = _hosts[(name, number)] = HostInfo.model_construct(host=name, port=number)
    return made


#: ``str.isspace`` and the regex class ``\s`` agree on every code point; HostInfo uses the former.
_WHITESPACE: Final = re.compile(r"\s")


# Shared instances: ids are frozen, so every decoded "0_3" can be the same object, and a leader
# decodes the same task universe once per member. The tables are cleared when they grow past a
# bound, so a long-lived process does not accumulate every id it ever saw.
_INTERN_LIMIT: Final = 1 << 18
_tasks: dict[tuple[int, int, str | None], TaskId] = {}
#: the unnamed ones of ``_tasks`` by rank (``subtopology << 31 | partition``): int keys, made
#: and hashed without a tuple each (a leader reads 200 of a member's offset sums per group)
_ranked: dict[int, TaskId] = {}
_partitions: dict[tuple[str, int], TopicPartition] = {}
_hosts: dict[tuple[str, int], HostInfo] = {}
_process_ids: dict[bytes, ProcessId] = {}


def task_id(subtopology: int, partition: int, topology: str | None) -> TaskId:
    """A ``TaskId`` for values the caller has already range-checked."""
    key = (subtopology, partition, topology)
    task = _tasks.get(key)
    if task is None:
        if len(_tasks) >= _INTERN_LIMIT:
            _tasks.clear()
            _ranked.clear()
        task = _tasks[key] = trusted_task_id(subtopology, partition, topology)
        if topology is None:
            _ranked[subtopology << 31 | partition] = task
    return task


def topic_partition(topic: str, partition: int) -> TopicPartition:
    """A ``TopicPartition`` for values the caller has already checked."""
    key = (topic, partition)
    tp = _partitions.get(key)
    if tp is None:
        if len(_partitions) >= _INTERN_LIMIT:
            _partitions.clear()
        tp = _partitions[key] = trusted_topic_partition(topic, partition)
    return tp


def task_id_range(subtopology: int, count: int) -> list[TaskId]:
    """``[task_id(subtopology, p, None) for p in range(count)]``, the table read in C.

    A leader's task plan makes one id per partition of every subtopology (6,000 at Kafka's
    LargePartitionCount point); a Python call per id was most of the plan. Ids missing from
    the table are made one by one, as :func:`task_id` makes them.
    """
    found: list[TaskId | None] = list(
        map(
            _tasks.get,
            zip(repeat(subtopology, count), range(count), repeat(None, count), strict=True),
        )
    )
    if any(map(is_, found, repeat(None))):  # ``is``, not ``in``: ``==`` calls TaskId.__eq__
        return [
            task_id(subtopology, p, None) if task is None else task for p, task in enumerate(found)
        ]
    return found  # type: ignore[return-value]  # no None left


def topic_partition_range(topic: str, count: int) -> list[TopicPartition]:
    """``[topic_partition(topic, p) for p in range(count)]``, the table read in C (see
    :func:`task_id_range`)."""
    found: list[TopicPartition | None] = list(
        map(_partitions.get, zip(repeat(topic, count), range(count), strict=True))
    )
    if any(map(is_, found, repeat(None))):
        return [topic_partition(topic, p) if tp is None else tp for p, tp in enumerate(found)]
    return found  # type: ignore[return-value]


def forget_interned() -> None:
    """Empty the shared-instance tables, so the next decode pays for every id (benchmarks)."""
    _tasks.clear()
    _ranked.clear()
    _partitions.clear()
    _hosts.clear()
    _process_ids.clear()


def interned_partitions() -> dict[tuple[str, int], TopicPartition]:
    """The shared ``TopicPartition`` table, for loops that inline the lookup (read only)."""
    return _partitions


def interned_tasks() -> dict[tuple[int, int, str | None], TaskId]:
    """The shared ``TaskId`` table, for loops that inline the lookup (read only)."""
    return _tasks


def interned_ranked_tasks() -> dict[int, TaskId]:
    """The unnamed tasks of the shared ``TaskId`` table by rank (``subtopology << 31 |
    partition``; read only: :func:`task_id` fills both)."""
    return _ranked


def interned_process_ids() -> dict[bytes, ProcessId]:
    """The shared ``ProcessId`` table (read only; :func:`process_id` fills it)."""
    return _process_ids


def interned_hosts() -> dict[tuple[str, int], HostInfo]:
    """The shared ``HostInfo`` table (endpoints already checked by :func:`host_info`; read
    only)."""
    return _hosts
