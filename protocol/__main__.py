"""``python -m protocol decode HEX_OR_@FILE``: show what a member or the leader sent, as JSON.

``HEX`` is the payload in hex (spaces and a ``0x`` prefix allowed); ``@FILE`` reads a file of raw
bytes or of hex text; ``@-`` reads standard input. Bad input prints the ``ProtocolError`` on
stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from protocol.codec import LATEST_VERSION, SUPPORTED_VERSIONS, Codec
from protocol.errors import ProtocolError
from protocol.jsonview import message_json
from protocol.messages import VersionHeader

_HEX_TEXT = re.compile(rb"\A\s*(?:0x)?([0-9a-fA-F\s]+)\Z")


class InputError(Exception):
    """The argument could not be turned into bytes (a missing file, bad hex)."""


def read_payload(argument: str) -> bytes:
    """Bytes from ``HEX``, ``@FILE`` or ``@-``; a file that is all hex text is read as hex."""
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
    try:
        return bytes.fromhex("".join(text.split()))
    except ValueError as exc:
        raise InputError(f"not hexadecimal: {exc}") from exc


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
    args = parser.parse_args(argv)
    codec = Codec(args.latest_supported)
    try:
        kind, message = codec.decode(read_payload(args.payload))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ProtocolError as exc:
        print(f"ProtocolError: {exc.field}: {exc.problem}", file=sys.stderr)
        return 2
    print(json.dumps(message_json(kind, message, codec.latest_supported), indent=2))
    if isinstance(message, VersionHeader):
        print(
            f"note: {kind} version {message.version} is newer than this build reads "
            f"({codec.latest_supported}); printed its header only",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
