"""A subscription read from a template reads exactly as it would alone.

``protocol._subscription_templates.TemplateReader`` reads a payload that repeats an earlier one's
bytes but for its offset sums from that payload's checked fields. Whatever it answers must be
``decode_fast``'s answer for the same bytes (a message or ``None``), whichever payloads it read
before: checked with a template in place and the second payload's sums drawn, then its bytes
mutated anywhere (so a member cannot make its payload read as something it is not), and the
template path must really be taken for the shape it exists for.
"""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import protocol._subscription_templates as templates_module
from assignor.testing import subscription_infos
from protocol import HostInfo, ProcessId, SubscriptionInfo, TaskId
from protocol._subscription_fast import decode_fast
from protocol._subscription_templates import TemplateReader
from protocol.codec import LATEST_VERSION, Codec, encode_subscription
from protocol.errors import ProtocolError

MUTATIONS = settings(
    max_examples=settings.default.max_examples * 2,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def same_as_alone(reader: TemplateReader, payload: bytes) -> SubscriptionInfo | None:
    """The reader's answer, after checking it against ``decode_fast`` on the same bytes."""
    read = reader.read(payload)
    alone = decode_fast(payload, LATEST_VERSION)
    assert read == alone, payload
    if read is not None and alone is not None:
        # field by field, in the model's order, down to the types, and no shared mutable field
        assert [(k, type(v)) for k, v in vars(read).items()] == [
            (k, type(v)) for k, v in vars(alone).items()
        ]
        assert read.client_tags is not alone.client_tags
    return read


_SUMS = st.dictionaries(
    st.builds(TaskId, st.integers(0, 3), st.integers(0, 40)),
    st.one_of(st.sampled_from([-2, -3, 0]), st.integers(0, 2**63 - 1)),
    max_size=6,
)


@settings(MUTATIONS)
@given(data=st.data())
def test_a_payload_after_a_template_reads_as_alone(data: st.DataObject) -> None:
    version = data.draw(st.sampled_from((3, 4)))
    info = data.draw(subscription_infos(st.just(version), named=False))
    other = info.model_copy(update={"task_offset_sums": data.draw(_SUMS)})
    first, second = encode_subscription(info), encode_subscription(other)
    codec = Codec()
    codec.decode_subscription(first)  # intern what they name, so the fast reader may read them
    codec.decode_subscription(second)
    reader = TemplateReader(LATEST_VERSION)
    same_as_alone(reader, first)
    same_as_alone(reader, first)  # (a template from the process's second payload)
    read = same_as_alone(reader, second)
    if read is not None:
        assert read == codec.decode_subscription(second)
    # the second payload's bytes changed anywhere: never read as anything but itself
    mutated = bytearray(second)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(mutated) - 1))
        mutated[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))
    same_as_alone(reader, bytes(mutated[:cut]) + data.draw(st.binary(max_size=3)))
    same_as_alone(reader, bytes(mutated))


@settings(MUTATIONS)
@given(data=st.data())
def test_sums_of_another_shape_are_never_accepted_alone(data: st.DataObject) -> None:
    """The in-between value replaced by any small value, or by several values (which would
    shift the fields after it)."""
    info = data.draw(subscription_infos(st.just(LATEST_VERSION), named=False))
    payload = encode_subscription(info)
    Codec().decode_subscription(payload)
    reader = TemplateReader(LATEST_VERSION)
    same_as_alone(reader, payload)
    same_as_alone(reader, payload)
    items = msgpack.unpackb(payload, raw=False)
    leaf = st.one_of(st.none(), st.integers(-(2**63), 2**64 - 1), st.text(max_size=3),
                     st.binary(max_size=3))
    values = data.draw(st.lists(st.one_of(leaf, st.lists(leaf, max_size=5)), min_size=1,
                                max_size=2))
    head = msgpack.packb(items[:6], use_bin_type=True)[1:]  # the fields before the sums
    tail = msgpack.packb(items[7:], use_bin_type=True)[1:]  # (without the array headers)
    middle = b"".join(msgpack.packb(v, use_bin_type=True) for v in values)
    same_as_alone(reader, payload[:1] + head + middle + tail)


def _whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every payload read whole (``decode_fast``) from now on, not from a template."""
    whole_reads: list[bytes] = []
    original = templates_module.decode_fast

    def counted(raw: bytes, latest: int) -> SubscriptionInfo | None:
        whole_reads.append(raw)
        return original(raw, latest)

    monkeypatch.setattr(templates_module, "decode_fast", counted)
    return whole_reads


def test_the_consumers_of_one_process_are_read_from_a_template(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Busy threads of one process (one task each) after an idle one: one whole read."""
    base = dict(
        version=LATEST_VERSION,
        latest_supported_version=LATEST_VERSION,
        process_id=ProcessId.for_int(3),
        user_endpoint=HostInfo("host-templates", 8080),
    )
    payloads = [encode_subscription(SubscriptionInfo(**base))] + [
        encode_subscription(SubscriptionInfo(task_offset_sums={TaskId(0, p): -2}, **base))
        for p in range(5)
    ]
    codec = Codec()
    alone = [codec.decode_subscription(p) for p in payloads]
    whole_reads = _whole_reads(monkeypatch)
    assert list(codec.read_subscriptions(payloads)) == alone
    assert whole_reads == payloads[:2]  # a template from the process's second payload on


def test_interleaved_processes_each_read_from_their_own_template(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Two processes' busy threads alternating (the template that fit last never fits the
    next payload): each is found by its prefix, and reads as it would alone."""
    def payloads(process: int) -> list[bytes]:
        base = dict(
            version=LATEST_VERSION,
            latest_supported_version=LATEST_VERSION,
            process_id=ProcessId.for_int(process),
            user_endpoint=HostInfo(f"host-{process}", 8080),
        )
        return [
            encode_subscription(SubscriptionInfo(task_offset_sums={TaskId(0, p): p}, **base))
            for p in range(4)
        ]

    mixed = [p for pair in zip(payloads(5), payloads(6), strict=True) for p in pair]
    codec = Codec()
    alone = [codec.decode_subscription(p) for p in mixed]
    whole_reads = _whole_reads(monkeypatch)
    assert list(codec.read_subscriptions(mixed)) == alone
    assert whole_reads == mixed[:4]  # each process's first two; every later one a template's


def test_reading_stops_at_a_payload_that_cannot_be_read() -> None:
    """The leader keeps what was read before an unreadable payload (``list.extend``), and
    reads the rest member by member: the payloads before it are yielded, then it raises."""
    base = dict(
        version=LATEST_VERSION,
        latest_supported_version=LATEST_VERSION,
        process_id=ProcessId.for_int(7),
        user_endpoint=HostInfo("host-7", 8080),
    )
    good = [
        encode_subscription(SubscriptionInfo(task_offset_sums={TaskId(0, p): p}, **base))
        for p in range(3)
    ]
    read: list[object] = []
    codec = Codec()
    with pytest.raises(ProtocolError):
        read.extend(codec.read_subscriptions([*good, b"\x00not msgpack", good[0]]))
    assert read == [codec.decode_subscription(p) for p in good]


_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.text(max_size=3),
    st.binary(max_size=3),
)
#: one group's offset sum: the valid ones, their neighbours, and the ends of the range
_SUM = st.one_of(st.sampled_from([-4, -3, -2, -1, 0, 2**63 - 1, 2**63]), st.integers(0, 2**40))
_ONE_TASK = st.builds(lambda s, p, o: msgpack.packb([[None, s, p, o]]), st.integers(0, 1),
                      st.integers(0, 29), st.sampled_from([-3, -2, 0, 7, 2**63 - 1]))
#: the in-between bytes of a payload of a process's run: mostly a busy consumer's report of
#: one task it has seen (the shape read together), else one that fails one check (a task it
#: has not seen, a sum or number out of range), no sums, or one or more values of any shape
_SECTIONS = st.one_of(
    _ONE_TASK, _ONE_TASK, _ONE_TASK, _ONE_TASK,
    st.builds(
        lambda s, p, o: msgpack.packb([[None, s, p, o]]),
        st.integers(-1, 3), st.integers(-1, 60), _SUM,
    ),
    st.just(msgpack.packb([])),
    st.lists(st.one_of(_LEAF, st.lists(_LEAF, max_size=5)), min_size=1, max_size=3).map(
        lambda values: b"".join(msgpack.packb(v, use_bin_type=True) for v in values)
    ),
)


def _read_in_order(codec: Codec, payloads: list[bytes]) -> tuple[list[object], bool]:
    """What ``read_subscriptions`` yields before it stops, and whether it raised."""
    read: list[object] = []
    try:
        read.extend(codec.read_subscriptions(payloads))
    except ProtocolError:
        return read, True
    return read, False


@settings(MUTATIONS)
@given(data=st.data())
def test_a_run_of_one_process_reads_as_each_payload_alone(data: st.DataObject) -> None:
    """A process's payloads read together (``_read_run``: four or more that fit one template,
    here among another process's) read exactly as each would alone, whatever their offset
    sums hold: a message equal field by field, in the model's order, with its own map of
    tags; or, at the first payload that cannot be read, the error there after every payload
    before it."""
    info = data.draw(subscription_infos(st.just(LATEST_VERSION), named=False))
    payload = encode_subscription(info)
    codec = Codec()
    codec.decode_subscription(  # tasks this process has seen (a few of those drawn below)
        encode_subscription(info.model_copy(
            update={"task_offset_sums": {TaskId(s, p): 0 for s in range(2) for p in range(30)}}
        ))
    )
    items = msgpack.unpackb(payload, raw=False)
    head = payload[:1] + msgpack.packb(items[:6], use_bin_type=True)[1:]
    tail = msgpack.packb(items[7:], use_bin_type=True)[1:]
    sections = data.draw(st.lists(_SECTIONS, min_size=4, max_size=12))
    run = [head + section + tail for section in sections]
    other = encode_subscription(SubscriptionInfo(
        version=LATEST_VERSION, latest_supported_version=LATEST_VERSION,
        process_id=ProcessId.for_int(99), user_endpoint=HostInfo("host-other", 8080),
    ))
    payloads = [payload, payload, *[p for raw in run for p in (raw, other)]]
    alone: list[object] = []
    for raw in payloads:
        try:
            alone.append(Codec().decode_subscription(raw))
        except ProtocolError:
            break
    read, raised = _read_in_order(codec, payloads)
    assert read == alone
    assert raised == (len(alone) < len(payloads))
    for together, single in zip(read, alone, strict=True):
        assert [(k, type(v)) for k, v in vars(together).items()] == [
            (k, type(v)) for k, v in vars(single).items()
        ]
    tags = [id(m.client_tags) for m in read if isinstance(m, SubscriptionInfo)]
    assert len(set(tags)) == len(tags)  # no map of tags shared between members
