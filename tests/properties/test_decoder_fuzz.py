"""The decoders at volume: a seeded stream of mutated payloads (bit flips, cuts, splices, random
bytes), 20,000 under ``make test`` and 1,000,000 under ``make test-deep``; only ``ProtocolError``
escapes and memory stays bounded.

Hypothesis' fuzzers (``tests/protocol/test_codec_fuzz.py``) look for the cleverest inputs; this
one is about volume, which hypothesis' per-example cost makes impractical. A failure names the
seed and the index of the input, which regenerate it exactly.
"""

from __future__ import annotations

import os
import random
import tracemalloc

from protocol import ProtocolError
from protocol.codec import LATEST_VERSION, Codec
from tests.protocol.samples import FUTURE, assignment, subscription

_DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
INPUTS = 1_000_000 if _DEEP else 20_000
SEED = 20261122
#: Peak traced memory allowed while decoding (the largest payload here is a few KiB).
MEMORY_BOUND = 64 * 1024 * 1024
CODECS = [Codec(v) for v in range(1, LATEST_VERSION + 1)]


def _mutate(rng: random.Random, corpus: list[bytes]) -> bytes:
    data = bytearray(rng.choice(corpus))
    kind = rng.randrange(5)
    if kind == 0 and data:  # flip bits
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1 and data:  # cut short
        del data[rng.randrange(len(data)):]
    elif kind == 2:  # splice two payloads
        other = rng.choice(corpus)
        data = data[: rng.randint(0, len(data))] + other[rng.randint(0, len(other)):]
    elif kind == 3 and data:  # overwrite a byte with a msgpack marker
        data[rng.randrange(len(data))] = rng.choice((0xC1, 0xD9, 0xDC, 0xDD, 0xDE, 0xDF, 0xC7))
    else:  # random bytes
        data = bytearray(rng.randbytes(rng.randint(0, 64)))
    return bytes(data)


def _corpus() -> list[bytes]:
    """Every sample message written at every version, and the future ones."""
    codec = Codec()
    payloads = list(FUTURE.values())
    for version in range(1, LATEST_VERSION + 1):
        payloads.append(codec.encode_subscription(subscription(version)))
        payloads.append(codec.encode_assignment(assignment(version), version=version))
    return payloads


def test_a_million_mutated_payloads_raise_only_protocol_errors() -> None:
    corpus = _corpus()
    rng = random.Random(SEED)
    tracemalloc.start()
    try:
        for index in range(INPUTS):
            data = _mutate(rng, corpus)
            codec = CODECS[index % len(CODECS)]
            for decode in (codec.decode_subscription, codec.decode_assignment):
                try:
                    decode(data)
                except ProtocolError:
                    pass
                except Exception as exc:  # the property: nothing else escapes
                    raise AssertionError(
                        f"seed {SEED}, input {index} ({data.hex()}): "
                        f"{type(exc).__name__}: {exc}") from exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_BOUND, f"peak {peak} bytes while decoding"
