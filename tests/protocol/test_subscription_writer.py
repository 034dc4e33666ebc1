"""A member's subscription writer gives exactly ``Codec.encode_subscription``'s bytes or error.

``Codec.subscription_writer()`` packs what did not change since the member's last subscription
once and splices the new offset sums and unique field in between. Here drawn sequences of
subscriptions that mostly share their other fields (as one member's joins do), with some
changed, some equal but new, some invalid for the version, are written both ways.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignor.testing import subscription_infos
from protocol import SubscriptionInfo
from protocol.codec import Codec
from protocol.ids import ProcessId, TaskId
from protocol.messages import LATEST_OFFSET

_SUMS = st.dictionaries(
    st.builds(TaskId, st.integers(0, 3), st.integers(0, 40)),
    st.one_of(st.just(LATEST_OFFSET), st.integers(0, 2**40)),
    max_size=12,
)
_NAMED_SUMS = st.dictionaries(
    st.builds(TaskId, st.integers(0, 3), st.integers(0, 40), st.sampled_from(["a", "b"])),
    st.integers(0, 100),
    min_size=1,
    max_size=3,
)


def _written(write: Any, info: SubscriptionInfo, version: int | None) -> object:
    try:
        return write(info, version)
    except Exception as error:  # the same error, with the same words
        return (type(error), str(error))


@st.composite
def _joins(draw: st.DrawFn) -> list[tuple[SubscriptionInfo, int | None]]:
    """One member's subscriptions: a drawn one, then changes of it (the fields not changed
    are the very objects of the one before, as a member's own are)."""
    info = draw(subscription_infos())
    joins: list[tuple[SubscriptionInfo, int | None]] = []
    for _ in range(draw(st.integers(1, 6))):
        change = draw(st.sampled_from(["sums", "sums", "sums", "tags", "same_tags", "other",
                                       "named", "version"]))
        update: dict[str, Any] = {"unique_field": draw(st.integers(0, 255))}
        if change in ("sums", "version"):
            update["task_offset_sums"] = draw(_SUMS)
        elif change == "named":
            update["task_offset_sums"] = draw(_NAMED_SUMS)
        elif change == "tags":
            update["client_tags"] = draw(st.dictionaries(st.sampled_from("xyz"), st.text(
                max_size=3), max_size=2))
        elif change == "same_tags":
            update["client_tags"] = dict(info.client_tags)
        else:
            update["process_id"] = ProcessId.for_int(draw(st.integers(0, 3)))
        info = info.model_copy(update=update)
        version = draw(st.sampled_from([None, 1, 2, 3, 4])) if change == "version" else None
        joins.append((info, version))
    return joins


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(joins=_joins(), latest=st.sampled_from([4, 4, 3, 2]))
def test_the_writer_writes_what_the_codec_writes(
    joins: list[tuple[SubscriptionInfo, int | None]], latest: int
) -> None:
    codec = Codec(latest)
    writer = codec.subscription_writer()
    for info, version in joins:
        assert _written(writer, info, version) == _written(codec.encode_subscription, info,
                                                            version)


def test_only_the_first_of_one_members_joins_is_packed_in_full() -> None:
    """The splice happens: a member's later joins (new sums, new unique field) do not call the
    full encoder, and a changed field does."""
    codec = Codec()
    writer = codec.subscription_writer()
    full: list[int] = []
    real = writer._encode  # type: ignore[attr-defined]

    def counted(info: SubscriptionInfo, version: int | None) -> bytes:
        full.append(info.unique_field)
        return real(info, version)  # type: ignore[no-any-return]

    writer._encode = counted  # type: ignore[attr-defined]
    info = SubscriptionInfo(
        version=4, latest_supported_version=4, process_id=ProcessId.for_int(1),
        client_tags={"rack": "r1"},
    )
    for unique in range(1, 5):
        info = info.model_copy(update={
            "unique_field": unique, "task_offset_sums": {TaskId(0, unique): unique * 10},
            "client_tags": dict(info.client_tags),
        })
        assert writer(info, None) == codec.encode_subscription(info)
    assert full == [1]
    info = info.model_copy(update={"process_id": ProcessId.for_int(2)})
    assert writer(info, None) == codec.encode_subscription(info)
    assert full == [1, 4]
