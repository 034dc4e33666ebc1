"""Checked reading: bounded msgpack parsing, typed field checks, and shared id instances.

Everything here raises ``ProtocolError`` naming the field; nothing trusts a value's type, since
msgpack will happily hand back a bool where an int belongs or a list where a string does.
"""

from __future__ import annotations

import re
import uuid
from typing import Final, NoReturn

import msgpack

from protocol._limits import (
    INT32_MAX,
    MAX_ARRAY_LEN,
    MAX_CLIENT_TAGS,
    MAX_PAYLOAD_BYTES,
    MAX_STRING_BYTES,
    PROCESS_ID_BYTES,
)
from protocol.errors import AssignorError, ProtocolError
from protocol.ids import (
    HostInfo,
    ProcessId,
    TaskId,
    TopicPartition,
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


def fail(field: str, problem: str) -> NoReturn:
    raise ProtocolError(field, problem)


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
        fail("payload", f"{len(raw)} bytes exceeds the limit of {MAX_PAYLOAD_BYTES} bytes")
    return raw


def read_header(raw: bytes) -> tuple[int, int, int]:
    """Read ``[version, second, kind, ...`` without touching the rest of the payload.

    This is all a reader can rely on in a version newer than its own, so it must not depend on
    anything after the kind marker.
    """
    unpacker = msgpack.Unpacker(
        max_buffer_size=len(raw),
        max_str_len=MAX_STRING_BYTES,
        max_bin_len=PROCESS_ID_BYTES,
        max_array_len=min(MAX_ARRAY_LEN, len(raw)),
        max_map_len=min(MAX_CLIENT_TAGS, len(raw)),
        max_ext_len=0,
    )
    unpacker.feed(raw)
    try:
        length = unpacker.read_array_header()
    except msgpack.OutOfData:
        fail("payload", "is truncated before the header")
    except ValueError:
        fail("payload", "does not start with a msgpack array")
    if length < 3:
        fail("payload", f"has {length} top-level fields; at least 3 (the header) are required")
    try:
        version = unpacker.unpack()
        second = unpacker.unpack()
        kind = unpacker.unpack()
    except msgpack.OutOfData:
        fail("payload", "is truncated inside the header")
    except (msgpack.UnpackException, ValueError) as exc:
        fail("payload", f"has a header that is not msgpack within the format's limits ({exc})")
    if type(kind) is not int or kind not in KIND_NAMES:
        fail(
            "kind",
            f"{kind!r} is neither {KIND_SUBSCRIPTION} (subscription) nor "
            f"{KIND_ASSIGNMENT} (assignment)",
        )
    second_name = SECOND_NAMES[kind]
    version = need_int(version, "version", 1, INT32_MAX)
    second = need_int(second, second_name, 1, INT32_MAX)
    if second < version:
        fail(second_name, f"{second} is older than the version {version} the payload is written in")
    return version, second, kind


def unpack_all(raw: bytes) -> list[object]:
    """Parse the whole payload with every msgpack limit set; the top level must be an array."""
    size = len(raw)
    try:
        value = msgpack.unpackb(
            raw,
            raw=False,
            use_list=True,
            strict_map_key=True,
            max_str_len=MAX_STRING_BYTES,
            max_bin_len=PROCESS_ID_BYTES,
            max_array_len=min(MAX_ARRAY_LEN, size),
            max_map_len=min(MAX_CLIENT_TAGS, size),
            max_ext_len=0,
        )
    except msgpack.ExtraData:
        fail("payload", "has bytes after the message")
    except (msgpack.UnpackException, ValueError) as exc:
        # Truncation, a limit hit, invalid UTF-8, an extension type, a non-string map key.
        fail("payload", f"is not msgpack within the format's limits ({exc})")
    if type(value) is not list:
        fail("payload", "is not a msgpack array")
    return value


def need_int(value: object, field: str, low: int, high: int) -> int:
    if type(value) is not int:
        fail(field, f"expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        fail(field, f"{value} is outside [{low}, {high}]")
    return value


def need_list(value: object, field: str) -> list[object]:
    if type(value) is not list:
        fail(field, f"expected an array, got {type(value).__name__}")
    return value


def need_str(value: object, field: str, max_len: int = MAX_STRING_BYTES) -> str:
    if type(value) is not str:
        fail(field, f"expected a string, got {type(value).__name__}")
    if not value:
        fail(field, "is empty")
    if len(value) > max_len:
        fail(field, f"is {len(value)} characters long; at most {max_len} are allowed")
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
    if type(value) is not bytes or len(value) != PROCESS_ID_BYTES:
        fail("process_id", f"expected {PROCESS_ID_BYTES} raw bytes")
    return ProcessId.model_construct(uuid=uuid.UUID(bytes=value))


def host_info(host: object, port: object, field: str) -> HostInfo:
    """A ``HostInfo`` after HostInfo's own checks; endpoints recur, so instances are shared."""
    if type(host) is str and type(port) is int:
        known = _hosts.get((host, port))
        if known is not None:
            return known
    name = need_str(host, f"{field}.host", 255)
    number = need_int(port, f"{field}.port", 0, 65535)
    if _WHITESPACE.search(name):
        fail(f"{field}.host", f"{name!r} contains whitespace")
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
_partitions: dict[tuple[str, int], TopicPartition] = {}
_hosts: dict[tuple[str, int], HostInfo] = {}


def task_id(subtopology: int, partition: int, topology: str | None) -> TaskId:
    """A ``TaskId`` for values the caller has already range-checked."""
    key = (subtopology, partition, topology)
    task = _tasks.get(key)
    if task is None:
        if len(_tasks) >= _INTERN_LIMIT:
            _tasks.clear()
        task = _tasks[key] = trusted_task_id(subtopology, partition, topology)
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


def interned_partitions() -> dict[tuple[str, int], TopicPartition]:
    """The shared ``TopicPartition`` table, for loops that inline the lookup (read only)."""
    return _partitions


def interned_tasks() -> dict[tuple[int, int, str | None], TaskId]:
    """The shared ``TaskId`` table, for loops that inline the lookup (read only)."""
    return _tasks
