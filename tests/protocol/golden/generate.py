"""Rewrite the golden files from ``tests/protocol/samples.py``.

Run only when the format changes on purpose (a new version): ``.venv/bin/python
tests/protocol/golden/generate.py``. The files are committed; ``test_codec_golden.py`` fails when
the encoder's output drifts from them, which is the point.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from protocol.codec import encode_assignment, encode_subscription  # noqa: E402
from tests.protocol.samples import FUTURE, GOLDEN  # noqa: E402


def main() -> None:
    for name, (kind, version, message) in GOLDEN.items():
        if kind == "subscription":
            data = encode_subscription(message, version)  # type: ignore[arg-type]
        else:
            data = encode_assignment(message, version)  # type: ignore[arg-type]
        (HERE / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")
    for name, data in FUTURE.items():
        (HERE / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes (hand-made future version)")


if __name__ == "__main__":
    main()
