"""The packed host maps are the bytes msgpack writes for the nested list of hosts and runs,
whether a run's deltas fit one-byte fixints (packed as ``bytes``) or not (packed as a list)."""

from __future__ import annotations

from itertools import pairwise

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from protocol._assignment_format import _packed_hosts
from protocol.ids import HostInfo

_RUNS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.lists(st.integers(0, 70_000), min_size=1, max_size=30, unique=True).map(sorted),
    ),
    max_size=3,
    unique_by=lambda run: run[0],
)
_HOSTS = st.dictionaries(
    st.builds(HostInfo, host=st.sampled_from(["h1", "h2", "x"]), port=st.integers(1, 65535)),
    _RUNS.map(tuple),
    max_size=4,
)


@given(_HOSTS)
def test_the_packed_hosts_are_msgpacks_bytes_for_the_list(
    runs_of: dict[HostInfo, tuple[tuple[str, list[int]], ...]],
) -> None:
    index = {"a": 0, "b": 1, "c": 2}
    expected = [
        [host.host, host.port]
        + [[index[topic], numbers[0], *(b - a for a, b in pairwise(numbers))]
           for topic, numbers in runs_of[host]]
        for host in sorted(runs_of, key=lambda h: (h.host, h.port))
    ]
    packer = msgpack.Packer(use_bin_type=True)
    assert _packed_hosts(runs_of, index, packer) == packer.pack(expected)
