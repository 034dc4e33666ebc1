"""Hypothesis strategies for everything the assignor meets, for your own property tests.

Needs hypothesis, which comes with the ``dev`` extra (``pip install 'streams-assignor[dev]'``);
``import assignor`` never imports this module, so applications do not need it.

Every strategy draws values through the models' validating constructors (a generated value is one
the code may legitimately receive), favours small cases so failures shrink to readable examples,
and takes parameters so that you pin what you know and let hypothesis vary the rest: each
parameter accepts a value or a strategy, and ``None`` means "anything sensible"::

    from hypothesis import given, strategies as st
    from assignor.testing import groups

    @given(groups(topology=my_topology, processes=st.integers(3, 12)))
    def test_my_app(group):
        result = assign_group(group.topology, group.assignor_config(), group.group_input())

The families, smallest first:

- protocol values: :func:`task_ids`, :func:`process_ids`, :func:`host_infos`,
  :func:`offset_sums`, :func:`subscription_infos` and :func:`assignment_infos` at every version,
  :func:`version_headers` (newer builds);
- topologies: :func:`topology_plans` (builder calls as data, replayed by :func:`build_plan`),
  :func:`topologies` (built), :func:`topology_data` (the data form), cluster metadata
  (:func:`partition_counts`, :func:`sized_topologies`);
- groups: :func:`configs` (``AssignorConfig`` entries under Kafka's names),
  :func:`process_layouts` (1-16 threads, client tags, racks, endpoints, static ids, builds and
  local state with lags), and :func:`groups`: a :class:`Group` with views for the leader's
  pipeline (:meth:`Group.group_input`) and for the simulator (:meth:`Group.scenario_data`).
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "assignor.testing needs hypothesis: pip install 'streams-assignor[dev]'"
    ) from exc

from assignor.testing._groups import (
    TAG_KEYS,
    TAG_VALUES,
    TASK_ASSIGNORS,
    Group,
    ProcessLayout,
    configs,
    groups,
    pinned,
    process_layouts,
)
from assignor.testing._messages import (
    assignment_infos,
    error_codes,
    host_infos,
    host_maps,
    names,
    offset_sums,
    process_ids,
    small_or_any,
    subscription_infos,
    task_ids,
    topic_names,
    topic_partitions,
    version_headers,
    versions,
)
from assignor.testing._topologies import (
    APPLICATION_ID,
    Plan,
    Step,
    build_plan,
    partition_counts,
    sized_topologies,
    topologies,
    topology_data,
    topology_plans,
)
from protocol.ids import INT32_MAX, INT64_MAX

__all__ = [
    "APPLICATION_ID",
    "INT32_MAX",
    "INT64_MAX",
    "TAG_KEYS",
    "TAG_VALUES",
    "TASK_ASSIGNORS",
    "Group",
    "Plan",
    "ProcessLayout",
    "Step",
    "assignment_infos",
    "build_plan",
    "configs",
    "error_codes",
    "groups",
    "host_infos",
    "host_maps",
    "names",
    "offset_sums",
    "partition_counts",
    "pinned",
    "process_ids",
    "process_layouts",
    "sized_topologies",
    "small_or_any",
    "subscription_infos",
    "task_ids",
    "topic_names",
    "topic_partitions",
    "topologies",
    "topology_data",
    "topology_plans",
    "version_headers",
    "versions",
]
