"""The offset sums' encoder: its path for unnamed tasks writes what the general path writes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from protocol._subscription_format import _encode_offset_sums
from protocol.ids import INT32_MAX, TaskId

_SUMS = st.dictionaries(
    st.tuples(st.integers(0, INT32_MAX), st.integers(0, INT32_MAX))
    | st.tuples(st.integers(0, 3), st.integers(0, 40)),
    st.integers(-3, 2**63 - 1),
    max_size=40,
)


def _without_rank(task: TaskId) -> TaskId:
    object.__delattr__(task, "_rank")
    return task


@given(sums=_SUMS, named=st.booleans())
def test_unnamed_sums_encode_as_the_general_path_encodes_them(
    sums: dict[tuple[int, int], int], named: bool
) -> None:
    kept = {TaskId(s, p): v for (s, p), v in sums.items()}
    # the same tasks with their kept ``_rank`` dropped, so the general path writes these
    bare = {_without_rank(TaskId(s, p)): v for (s, p), v in sums.items()}
    assert all(not hasattr(task, "_rank") for task in bare)
    assert _encode_offset_sums(kept, named=named) == _encode_offset_sums(bare, named=named)


def test_a_named_task_among_unnamed_ones_takes_the_general_path() -> None:
    sums = {TaskId(1, 4): 7, TaskId(0, 2, topology="b"): 5, TaskId(0, 1): -2}
    want = [[None, 0, 1, -2], [None, 1, 4, 7], ["b", 0, 2, 5]]
    assert _encode_offset_sums(sums, named=True) == want
