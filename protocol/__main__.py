"""``python -m protocol decode HEX_OR_@FILE``: show what a member or the leader sent, as JSON.

``HEX`` is the payload in hex (spaces and a ``0x`` prefix allowed); ``@FILE`` reads a file of raw
bytes or of hex text; ``@-`` and ``-`` read standard input. The payload is either our bare user
data or the whole ConsumerProtocol struct around it, as a broker keeps it and ``DescribeGroups``
returns it (``protocol.envelope``): ``--envelope auto`` (the default) tells them apart by the first
byte, ``subscription`` / ``assignment`` / ``none`` say which it is. Bad input prints the
``ProtocolError`` on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from protocol.codec import LATEST_VERSION, SUPPORTED_VERSIONS, Codec
from protocol.envelope import EnvelopeKind, looks_enveloped, read_envelope
from protocol.errors import ProtocolError
from protocol.ids import TopicPartition
from protocol.jsonview import JsonDict, message_json
from protocol.messages import VersionHeader

_HEX_TEXT = re.compile(rb"\A\s*(?:0x)?([0-9a-fA-F\s]+)\Z")


class InputError(Exception):
    """The argument could not be turned into bytes (a missing file, bad hex)."""


def read_payload(argument: str) -> bytes:
    """Bytes from ``HEX``, ``@FILE`` or ``@-``; a file that is all hex text is read as hex."""
    if argument == "-":
        argument = "@-"
    if argument.startswith("@"):
        name = argument[1:]
        try:
            raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {name!r}: {exc.strerror or exc}") from exc
        match = _HEX_TEXT.match(raw)
        return _from_hex(match[1].decode("ascii")) if match else raw
    text = argument.strip()
    if text.lower().startswith("0x"):
        text = text[2:]
    return _from_hex(text)


def _from_hex(text: str) -> bytes:
    digits = "".join(text.split())
    if len(digits) % 2:
        raise InputError(
            f"not hexadecimal bytes: {len(digits)} hex digits is an odd count (two per byte); "
            "was the payload cut or a digit lost when copying?"
        )
    try:
        return bytes.fromhex(digits)
    except ValueError as exc:
        raise InputError(f"not hexadecimal: {exc}") from exc


def decode_payload(codec: Codec, data: bytes, envelope: str) -> tuple[JsonDict, str | None]:
    """The JSON to print and an optional note for stderr; raises ``ProtocolError``.

    With an envelope, the user data is decoded as bare bytes are and the consumer-level fields go
    under ``consumer_protocol``; a problem in the user data names it as ``user_data`` within that
    envelope, so nobody mistakes it for a broken envelope.
    """
    if envelope == "none" or (envelope == "auto" and not looks_enveloped(data)):
        try:
            printed, note = _bare(codec, data)
        except ProtocolError as exc:
            if not looks_enveloped(data):
                raise
            raise ProtocolError(
                exc.field,
                f"{exc.problem}; it starts with 0x00 as a ConsumerProtocol struct does: "
                "leave out --envelope none",
            ) from None
        if printed["kind"] == "assignment" and "active_tasks" in printed:
            note = _joined(note, _BARE_PARTITIONS)
        return printed, note
    wrapper = read_envelope(data, None if envelope == "auto" else _KINDS[envelope])
    described = wrapper.as_json()
    if not wrapper.user_data:
        empty = f"the {wrapper.kind} carries no user data: not a Streams member's"
        return {"kind": wrapper.kind, "consumer_protocol": described}, empty
    assigned = None
    if wrapper.kind == "assignment":
        assigned = [
            TopicPartition(topic, number)
            for topic, numbers in wrapper.partitions
            for number in numbers
        ]
    try:
        printed, note = _bare(codec, wrapper.user_data, assigned)
    except ProtocolError as exc:
        raise ProtocolError(
            f"user_data.{exc.field}",
            f"{exc.problem} (in a consumer-protocol {wrapper.kind} v{wrapper.version} envelope, "
            "which itself read fine)",
        ) from None
    if printed["kind"] != wrapper.kind:
        note = f"a {wrapper.kind} envelope carries {printed['kind']} user data"
    elif assigned is not None and any(
        parts is None for parts in printed.get("active_tasks", {}).values()
    ):
        note = _joined(note, _MISALIGNED)
    return printed | {"consumer_protocol": described}, note


_KINDS: dict[str, EnvelopeKind] = {"subscription": "subscription", "assignment": "assignment"}
_BARE_PARTITIONS = (
    "bare user data: the assigned partitions travel in the ConsumerProtocol envelope, not in "
    "the user data, so partitions and each active task's partitions print as null; decode "
    "the enveloped bytes (as DescribeGroups returns them) to see them"
)
_MISALIGNED = (
    "the active task list and the envelope's assigned partitions differ in length: a member "
    "would report an assignment error; active tasks print without partitions"
)


def _joined(first: str | None, second: str) -> str:
    return second if first is None else f"{first}; {second}"


def _bare(
    codec: Codec, data: bytes, partitions: Sequence[TopicPartition] | None = None
) -> tuple[JsonDict, str | None]:
    kind, message = codec.decode(data)
    note = None
    if isinstance(message, VersionHeader):
        note = (
            f"{kind} version {message.version} is newer than this build reads "
            f"({codec.latest_supported}); printed its header only"
        )
    return message_json(kind, message, codec.latest_supported, partitions), note


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m protocol", description="Inspect streams-assignor protocol payloads."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    decode = commands.add_parser("decode", help="print a subscription or assignment as JSON")
    decode.add_argument("payload", metavar="HEX_OR_@FILE")
    decode.add_argument(
        "--latest-supported",
        type=int,
        choices=SUPPORTED_VERSIONS,
        default=LATEST_VERSION,
        help="read as a build whose latest version is this (default: %(default)s)",
    )
    decode.add_argument(
        "--envelope",
        choices=("auto", "none", *_KINDS),
        default="auto",
        help="the payload is our bare user data (none) or a ConsumerProtocol struct around it "
        "(subscription, assignment); auto decides by its first byte (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    codec = Codec(args.latest_supported)
    try:
        printed, note = decode_payload(codec, read_payload(args.payload), args.envelope)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ProtocolError as exc:
        print(f"ProtocolError: {exc.field}: {exc.problem}", file=sys.stderr)
        return 2
    print(json.dumps(printed, indent=2))
    if note is not None:
        print(f"note: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
