"""The PriorityQueue emulation: heap order, JDK steps, keys changing under the queue.

Exact agreement with the JDK's own PriorityQueue is tests/conformance/test_java_collections.py.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assignor._java.priority_queue import JavaPriorityQueue


def test_heapify_offer_poll_remove_examples() -> None:
    keys = list(range(10))
    heap = JavaPriorityQueue(keys, [5, 3, 8, 1, 9, 2])
    assert list(heap) == [1, 3, 2, 5, 9, 8]  # PriorityQueue(collection): heapify
    heap.offer(0)
    assert list(heap) == [0, 3, 1, 5, 9, 8, 2]
    assert heap.remove(3)
    assert not heap.remove(3)
    assert list(heap) == [0, 2, 1, 5, 9, 8]
    assert [heap.poll() for _ in range(7)] == [0, 1, 2, 5, 8, 9, None]


def test_external_keys_change_the_answer() -> None:
    keys = [(0.0, 0), (1.0, 1), (2.0, 2)]
    heap = JavaPriorityQueue(keys)
    for e in (0, 1, 2):
        heap.offer(e)
    keys[0] = (5.0, 0)  # client 0 gets loaded while it sits in the queue
    assert not heap.is_heap_ordered()
    assert heap.poll() == 0  # Java answers by array layout: still the head
    assert heap.poll() == 1


def test_refill_is_clear_then_offers() -> None:
    keys = [(3 - e, e) for e in range(4)]
    by_offers = JavaPriorityQueue(keys)
    for e in (2, 0, 3, 1):
        by_offers.offer(e)
    refilled = JavaPriorityQueue(keys, [0, 1])
    refilled.refill([2, 0, 3, 1])
    assert list(refilled) == list(by_offers)


_ops = st.lists(
    st.tuples(st.sampled_from(["offer", "poll", "remove", "key"]), st.integers(0, 19),
              st.integers(0, 5)),
    max_size=80,
)


@given(st.lists(st.integers(0, 5), min_size=20, max_size=20), _ops)
def test_indexed_and_scanning_heaps_agree(
    start: list[int], ops: list[tuple[str, int, int]]
) -> None:
    """``indexed=True`` only finds slots faster: same arrays, same answers, keys changing."""
    keys = [(k, e) for e, k in enumerate(start)]
    plain = JavaPriorityQueue(keys, range(0, 20, 2))
    indexed = JavaPriorityQueue(keys, range(0, 20, 2), indexed=True)
    for op, element, value in ops:
        if op == "offer":
            if element in plain:
                continue
            plain.offer(element)
            indexed.offer(element)
        elif op == "poll":
            assert plain.poll() == indexed.poll()
        elif op == "remove":
            assert plain.remove(element) == indexed.remove(element)
        else:
            keys[element] = (value, element)
        assert list(plain) == list(indexed)
        assert all((e in plain) == (e in indexed) for e in range(20))


@given(st.lists(st.integers(0, 1000), unique=True, max_size=60), st.data())
def test_polls_come_out_sorted_while_keys_stay(items: list[int], data: st.DataObject) -> None:
    heap = JavaPriorityQueue(range(1001), items)
    assert heap.is_heap_ordered()
    gone = data.draw(st.lists(st.sampled_from(items), unique=True)) if items else []
    for item in gone:
        assert heap.remove(item)
        assert heap.is_heap_ordered()
    out = []
    while (head := heap.poll()) is not None:
        out.append(head)
    assert out == sorted(set(items) - set(gone))
