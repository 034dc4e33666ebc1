"""A host map's set that carries its numbers per topic (``HostPartitions``) is written exactly as
the plain set of the same partitions, and stays an ordinary set everywhere else."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given
from hypothesis import strategies as st

from protocol import NO_FOLLOWUP_REBALANCE, AssignmentInfo, AssignorError, Codec, HostInfo
from protocol.host_partitions import HostPartitions, topic_runs
from protocol.ids import TopicPartition, trusted_model

_SETS = st.frozensets(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "c"]), st.integers(0, 300)), max_size=40
)


def _listed(partitions: frozenset[TopicPartition]) -> tuple[tuple[str, list[int]], ...]:
    """The runs by hand: each topic's numbers, topics and numbers ascending."""
    topics = sorted({tp.topic for tp in partitions})
    return tuple(
        (t, sorted(tp.partition for tp in partitions if tp.topic == t)) for t in topics
    )


@given(_SETS, _SETS)
def test_runs_and_bytes_equal_the_plain_sets(active: frozenset[TopicPartition],
                                             standby: frozenset[TopicPartition]) -> None:
    assert topic_runs(active) == _listed(active)
    hosts = [HostInfo("h1", 1), HostInfo("h0", 2)]

    def info(carried: bool) -> AssignmentInfo:
        def as_set(ps: frozenset[TopicPartition]) -> frozenset[TopicPartition]:
            return HostPartitions(ps, _listed(ps)) if carried else frozenset(ps)

        return _info(
            {hosts[0]: as_set(active), hosts[1]: as_set(standby)}, {hosts[1]: as_set(active)}
        )

    carried = info(True)
    assert type(carried.partitions_by_host[hosts[0]]) is HostPartitions  # as the leader hands it
    for version in (1, 2, 3, 4):
        plain = Codec().encode_assignment(info(False), version=version)
        assert Codec().encode_assignment(carried, version=version) == plain


def _info(
    active: dict[HostInfo, frozenset[TopicPartition]],
    standby: dict[HostInfo, frozenset[TopicPartition]] | None = None,
) -> AssignmentInfo:
    """An answer whose maps are these very set objects (built as the leader builds its own,
    without validation, which would copy them)."""
    return trusted_model(AssignmentInfo, {
        "version": 4, "commonly_supported_version": 4, "active_tasks": (), "standby_tasks": {},
        "partitions_by_host": active, "standby_partitions_by_host": standby or {},
        "error_code": AssignorError.NONE, "next_rebalance_ms": NO_FOLLOWUP_REBALANCE,
        "host_maps_complete": True,
    })


def test_the_carried_runs_are_what_the_writer_packs() -> None:
    """The writer reads ``runs`` and not the partitions: a set whose runs say otherwise is
    written as its runs say (which is why only the leader, from its plan, builds one)."""
    hosts = {HostInfo("h", 1): HostPartitions([TopicPartition("a", 1)], (("a", [2]),))}
    said = _info(hosts)
    true = _info({HostInfo("h", 1): frozenset([TopicPartition("a", 2)])})
    assert Codec().encode_assignment(said) == Codec().encode_assignment(true)


def test_an_ordinary_set_otherwise() -> None:
    made = HostPartitions([TopicPartition("a", 1), TopicPartition("b", 0)],
                          (("a", [1]), ("b", [0])))
    plain = frozenset([TopicPartition("a", 1), TopicPartition("b", 0)])
    assert made == plain and hash(made) == hash(plain) and isinstance(made, frozenset)
    for other in (pickle.loads(pickle.dumps(made)), copy.copy(made), copy.deepcopy(made)):
        assert other == plain
        assert type(other) is frozenset  # the runs are not carried along: recomputed if read
