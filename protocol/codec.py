"""The versioned msgpack codec for subscriptions and assignments (our format, not Java's bytes).

Every payload is one msgpack array that starts ``[version, second, kind, ...]``: ``second`` is
the writer's latest supported version (subscriptions) or the group's commonly supported version
(assignments), and ``kind`` tells the two messages apart. Those three values keep their place in
every version, so a reader can always answer a newer writer (KIP-268 version probing): decoding a
version newer than the codec's own returns a ``VersionHeader`` instead of failing.

=========  ======================================  ==========================================
version    subscription adds                       assignment adds
=========  ======================================  ==========================================
1          process id, endpoint, task offset sums  active tasks, standby tasks, partitions by
                                                   host, error code
2          unique field, error code                standby partitions by host, next rebalance
3          client tags, rack id, group instance    named topologies
           id, named topologies
4          (error code moved to the fourth field)  host maps of the member's own endpoint only
                                                   when the group's would not fit the broker
=========  ======================================  ==========================================

From version 4 on, every payload keeps its error code as the fourth field,
``[version, second, kind, error_code, ...]``, and this reader already takes it from any payload
newer than itself: a member of a newer build that asks for a shutdown is heard at once, not only
after version probing has made it downgrade (``VersionHeader.error_code``). Versions 1 to 3 keep
the error code further in, so an older build reading them learns only the version numbers.

Writing an older version drops what it lacks: a v2 subscription loses ``client_tags``,
``rack_id`` and ``group_instance_id``; a v1 one loses ``unique_field`` and ``error_code`` too;
a v1 assignment loses ``standby_partitions_by_host`` and ``next_rebalance_ms``. Tasks of a named
topology cannot be written below version 3 (``ValueError``), as in Kafka, and host maps of the
member's own endpoint only (``host_maps_complete=False``) not below version 4. The reader fills
missing fields with the model's defaults.

Decoding is bounded (see ``protocol._limits``) and raises only ``ProtocolError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final, Literal, cast

import msgpack

from protocol import _assignment_format, _subscription_format
from protocol._assignment_fast import decode_fast as decode_assignment_fast
from protocol._limits import (
    MAX_ASSIGNMENT_BYTES,
    MAX_HOSTS,
    MAX_SUBSCRIPTION_BYTES,
)
from protocol._read import (
    KIND_ASSIGNMENT,
    KIND_NAMES,
    KIND_SUBSCRIPTION,
    Reader,
    as_bytes,
    fail,
    read_header,
)
from protocol._subscription_fast import decode_fast
from protocol._subscription_templates import TemplateReader
from protocol.errors import MAX_PROBLEM_CHARS, ProtocolError, shorten
from protocol.ids import INT32_MAX, HostInfo
from protocol.messages import (
    HEADER_ERROR_CODE_VERSION,
    AssignmentInfo,
    SubscriptionInfo,
    VersionHeader,
)

LATEST_VERSION: Final = 4
SUPPORTED_VERSIONS: Final = tuple(range(1, LATEST_VERSION + 1))

Kind = Literal["subscription", "assignment"]
Message = SubscriptionInfo | AssignmentInfo | VersionHeader

_ARTICLED = {KIND_SUBSCRIPTION: "a subscription", KIND_ASSIGNMENT: "an assignment"}
#: ``msgpack.packb(..., use_bin_type=True)`` without a new ``Packer`` per call (every consumer
#: writes a subscription at every join; the packer empties itself after each call, raised or not)
_PACK_SUBSCRIPTION: Final = msgpack.Packer(use_bin_type=True).pack
#: Largest payload of each kind that is read beyond its header.
_MAX_BYTES = {KIND_SUBSCRIPTION: MAX_SUBSCRIPTION_BYTES, KIND_ASSIGNMENT: MAX_ASSIGNMENT_BYTES}


class Codec:
    """Reads and writes every version up to ``latest_supported``.

    ``Codec(latest_supported=1)`` behaves like an old build of this code: it writes at most
    version 1 and answers anything newer with the header alone.
    """

    __slots__ = ("_hosts", "_own_hosts", "latest_supported")

    def __init__(self, latest_supported: int = LATEST_VERSION) -> None:
        if type(latest_supported) is not int or latest_supported not in SUPPORTED_VERSIONS:
            raise ValueError(
                f"latest_supported must be one of {list(SUPPORTED_VERSIONS)}, "
                f"got {latest_supported!r}"
            )
        self.latest_supported = latest_supported
        # The last packed host maps: a leader encodes the same maps for every member.
        self._hosts: _assignment_format.HostSection | None = None
        # Own-endpoint maps packed per endpoint: the members of one process share an entry.
        self._own_hosts: dict[HostInfo | None, _assignment_format.HostSection] = {}

    def __repr__(self) -> str:
        return f"Codec(latest_supported={self.latest_supported})"

    def _version_to_write(self, requested: int | None, own: int, what: str) -> int:
        version = own if requested is None else requested
        if type(version) is not int or not 1 <= version <= self.latest_supported:
            raise ValueError(
                f"cannot encode a {what} at version {version!r}: this codec writes versions 1 "
                f"to {self.latest_supported}"
            )
        return version

    def encode_subscription(self, info: SubscriptionInfo, version: int | None = None) -> bytes:
        """Write ``info`` at ``version`` (default ``info.version``); see the module for drops."""
        version = self._version_to_write(version, info.version, "subscription")
        packed: bytes = _PACK_SUBSCRIPTION(_subscription_format.encode(info, version))
        # (every consumer writes one at every join: the size check's call only when over)
        if len(packed) > MAX_SUBSCRIPTION_BYTES:
            _checked_size(packed, KIND_SUBSCRIPTION)
        return packed

    def encode_assignment(self, info: AssignmentInfo, version: int | None = None) -> bytes:
        """Write ``info`` at ``version`` (default ``info.version``); see the module for drops."""
        version = self._version_to_write(version, info.version, "assignment")
        hosts = self._host_section(info, version)
        return _checked_size(_assignment_format.encode(info, version, hosts), KIND_ASSIGNMENT)

    def _host_section(self, info: AssignmentInfo, version: int) -> _assignment_format.HostSection:
        """The packed host maps of ``info``: the kept ones when equal, else packed and kept.

        A member's own-endpoint maps (``host_maps_complete=False``) are packed without
        replacing the kept section: they differ for every member, and the group's full maps may
        still be needed by members of an older version.
        """
        if not info.host_maps_complete:
            return self._own_host_section(info, version)
        kept = self._hosts
        hosts = kept.reuse(info, version) if kept is not None else None
        if hosts is None:
            hosts = _assignment_format.host_section(info, version)
        self._hosts = hosts
        return hosts

    def _own_host_section(
        self, info: AssignmentInfo, version: int
    ) -> _assignment_format.HostSection:
        """A member's own-endpoint maps, kept per endpoint: every consumer of a process gets
        the same entry, so at 10,000 consumers of 10 processes ten are packed, not 10,000."""
        endpoint = next(iter(info.partitions_by_host), None) or next(
            iter(info.standby_partitions_by_host), None
        )
        kept = self._own_hosts.get(endpoint)
        hosts = kept.reuse(info, version) if kept is not None else None
        if hosts is None:
            hosts = _assignment_format.host_section(info, version)
            if len(self._own_hosts) >= MAX_HOSTS:  # one group's endpoints at most
                self._own_hosts.clear()
            self._own_hosts[endpoint] = hosts
        return hosts

    def host_maps_bytes(self, info: AssignmentInfo, version: int) -> int:
        """Bytes the host maps of ``info`` take at ``version`` (packed once, then kept for the
        members' encodes): a leader weighs them against the broker's group record."""
        return len(self.packed_host_maps(info, version).packed)

    def packed_host_maps(
        self, info: AssignmentInfo, version: int
    ) -> _assignment_format.HostSection:
        """The host maps of ``info`` packed at ``version``, as ``encode_assignment`` splices
        them (kept like theirs): ``protocol.answers`` packs the rest of many answers around
        one such section."""
        version = self._version_to_write(version, info.version, "assignment")
        return self._host_section(info, version)

    def decode_subscription(self, data: bytes) -> SubscriptionInfo | VersionHeader:
        """Read a subscription, or only its header when it is newer than this codec.

        The common small payload is read in one call (``protocol._subscription_fast``), which
        accepts only what the checked reader accepts and leaves everything else to it.
        """
        if type(data) is bytes:
            fast = decode_fast(data, self.latest_supported)
            if fast is not None:
                return fast
        return cast(SubscriptionInfo | VersionHeader, self._decode(data, KIND_SUBSCRIPTION)[1])

    def read_subscriptions(
        self, payloads: Iterable[bytes]
    ) -> Iterator[SubscriptionInfo | VersionHeader]:
        """``decode_subscription`` of each of one rebalance's ``payloads``, in order: each read
        as it would be alone, those that repeat a payload read before but for their offset
        sums read from that one's checked fields (``protocol._subscription_templates.
        TemplateReader``), in one frame, not a call per payload (the leader reads 2,010
        distinct payloads at Kafka's ManyThreadsPerClient point). A payload that cannot be
        read raises there, after those before it were yielded."""
        if type(self).decode_subscription is not Codec.decode_subscription:
            return map(self.decode_subscription, payloads)  # a subclass's reading is its own
        read = self._template_reader().read_many(payloads)
        return cast(Iterator[SubscriptionInfo | VersionHeader], read)

    def _template_reader(self) -> TemplateReader:
        def streaming(data: bytes) -> SubscriptionInfo | VersionHeader:
            return cast(SubscriptionInfo | VersionHeader, self._decode(data, KIND_SUBSCRIPTION)[1])

        return TemplateReader(self.latest_supported, streaming)

    def decode_assignment(self, data: bytes) -> AssignmentInfo | VersionHeader:
        """Read an assignment, or only its header when it is newer than this codec.

        A member's common small answer is read in one call (``protocol._assignment_fast``),
        which accepts only what the checked reader accepts and leaves everything else to it.
        """
        if type(data) is bytes:
            fast = decode_assignment_fast(data, self.latest_supported)
            if fast is not None:
                return fast
        return cast(AssignmentInfo | VersionHeader, self._decode(data, KIND_ASSIGNMENT)[1])

    def decode(self, data: bytes) -> tuple[Kind, Message]:
        """Read either message; say which it was (for tools such as ``python -m protocol``)."""
        kind, message = self._decode(data, None)
        return ("subscription" if kind == KIND_SUBSCRIPTION else "assignment"), message

    def _decode(self, data: object, expected_kind: int | None) -> tuple[int, Message]:
        try:
            raw = as_bytes(data)
            reader = Reader(raw)
            version, second, kind, fields = read_header(reader)
            if expected_kind is not None and kind != expected_kind:
                fail("kind", f"this payload is {_ARTICLED[kind]}, not {_ARTICLED[expected_kind]}")
            if version > self.latest_supported:
                code = None
                if version >= HEADER_ERROR_CODE_VERSION:
                    if fields < 4:
                        fail(
                            "payload",
                            f"has {fields} top-level fields; a version {version} payload keeps "
                            "its error code in the fourth",
                        )
                    code = reader.integer("error_code", 0, INT32_MAX)
                header = VersionHeader.model_construct(
                    version=version, latest_supported_version=second, error_code=code
                )
                return kind, header
            if len(raw) > _MAX_BYTES[kind]:
                fail(
                    "payload",
                    f"{len(raw):,} bytes exceeds the limit of {_MAX_BYTES[kind]:,} bytes for "
                    f"{_ARTICLED[kind]}",
                )
            if kind == KIND_SUBSCRIPTION:
                return kind, _subscription_format.decode(reader, fields, version, second)
            return kind, _assignment_format.decode(reader, fields, version, second)
        except ProtocolError:
            raise
        except Exception as exc:  # the decoder's contract: nothing but ProtocolError escapes
            # ``str(exc)`` is cut before it is built into the message: it may quote input.
            detail = shorten(str(exc), MAX_PROBLEM_CHARS)
            raise ProtocolError(
                "payload", f"unexpected failure while decoding ({type(exc).__name__}: {detail})"
            ) from exc


def _checked_size(packed: bytes, kind: int) -> bytes:
    if len(packed) > _MAX_BYTES[kind]:
        raise ValueError(
            f"the encoded {KIND_NAMES[kind]} takes {len(packed):,} bytes, over the limit of "
            f"{_MAX_BYTES[kind]:,} that readers accept"
        )
    return packed


DEFAULT_CODEC: Final = Codec()


def encode_subscription(info: SubscriptionInfo, version: int | None = None) -> bytes:
    return DEFAULT_CODEC.encode_subscription(info, version)


def encode_assignment(info: AssignmentInfo, version: int | None = None) -> bytes:
    return DEFAULT_CODEC.encode_assignment(info, version)


def decode_subscription(data: bytes) -> SubscriptionInfo | VersionHeader:
    return DEFAULT_CODEC.decode_subscription(data)


def decode_assignment(data: bytes) -> AssignmentInfo | VersionHeader:
    return DEFAULT_CODEC.decode_assignment(data)


def decode(data: bytes) -> tuple[Kind, Message]:
    return DEFAULT_CODEC.decode(data)
