"""Kafka Streams' partition assignment for Python: what the group leader decides, and how to plug it
into aiokafka.

This module is the public API; the subpackages are the implementation and may change between
releases. Three ways in:

- an aiokafka application: :class:`StreamsProcess` (one per application instance) hands each
  consumer its :class:`StreamsPartitionAssignor`; :func:`ensure_internal_topics` creates the
  repartition and changelog topics a :class:`Topology` needs;
- the leader's decision as a pure function: :func:`assign_group` over a :class:`GroupInput`, and
  :func:`explain` for why each task went where it went;
- a process's local state on disk, in Kafka's layout: :class:`StateDirectory` (its
  ``offset_sums`` is the ``state()`` provider :class:`StreamsProcess` asks for);
- the pieces: topology (:class:`TopologyBuilder`), repartition sizing
  (:func:`size_internal_topics`), tasks (:func:`plan_tasks`), the task assignors behind
  :class:`TaskAssignor`, and :func:`assign_tasks_to_threads`.

Importing ``assignor`` does not import aiokafka: the adapter's names load on first use, so Spark
executors and users of the pure core stay light.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from assignor.adapter.metrics import RebalanceMetrics
from assignor.adapter.state_directory import StateDirectory, StateDirectoryError
from assignor.config import AssignorConfig, UnknownConfigError
from assignor.leader.explain import Placement, RebalanceSummary, explain, summarize
from assignor.leader.model import GroupInput, LeaderResult, MemberResult, MemberSubscription
from assignor.leader.pipeline import assign_group
from assignor.member import MemberAssignment, TaskChanges
from assignor.placement.client_state import ClientState, build_client_state
from assignor.placement.fallback_prior import FallbackPriorTaskAssignor
from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.legacy_sticky import LegacyStickyTaskAssignor
from assignor.placement.task_assignor import TaskAssignment, TaskAssignor
from assignor.placement.threads import TaskAssignmentError, assign_tasks_to_threads
from assignor.topology.builder import TopologyBuilder
from assignor.topology.data_form import (
    topology_from_data,
    topology_from_json,
    topology_to_data,
    topology_to_json,
)
from assignor.topology.internal_topics import InternalTopics, size_internal_topics
from assignor.topology.model import Subtopology, Topology, TopologyError
from assignor.topology.tasks import TaskLayout, plan_tasks

if TYPE_CHECKING:
    from assignor.adapter.admin import InternalTopicsError, ensure_internal_topics
    from assignor.adapter.answer_bytes import decode_answers
    from assignor.adapter.process import BrokerUnreachableError, StreamsProcess, derive_process_id
    from assignor.adapter.rejoin import RejoinUnsupportedError
    from assignor.adapter.streams_assignor import StreamsPartitionAssignor

#: Names that need aiokafka, and the module that defines each; loaded by ``__getattr__``.
_ADAPTER_NAMES = {
    "StreamsProcess": "assignor.adapter.process",
    "BrokerUnreachableError": "assignor.adapter.process",
    "StreamsPartitionAssignor": "assignor.adapter.streams_assignor",
    "derive_process_id": "assignor.adapter.process",
    "ensure_internal_topics": "assignor.adapter.admin",
    "InternalTopicsError": "assignor.adapter.admin",
    "RejoinUnsupportedError": "assignor.adapter.rejoin",
    "decode_answers": "assignor.adapter.answer_bytes",
}


def __getattr__(name: str) -> Any:
    module = _ADAPTER_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'assignor' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


try:
    __version__ = version("streams-assignor")
except PackageNotFoundError:  # pragma: no cover - run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AssignorConfig",
    "BrokerUnreachableError",
    "ClientState",
    "FallbackPriorTaskAssignor",
    "GroupInput",
    "HighAvailabilityTaskAssignor",
    "InternalTopics",
    "InternalTopicsError",
    "LeaderResult",
    "LegacyStickyTaskAssignor",
    "MemberAssignment",
    "MemberResult",
    "MemberSubscription",
    "Placement",
    "RebalanceMetrics",
    "RebalanceSummary",
    "RejoinUnsupportedError",
    "StateDirectory",
    "StateDirectoryError",
    "StreamsPartitionAssignor",
    "StreamsProcess",
    "Subtopology",
    "TaskAssignment",
    "TaskAssignmentError",
    "TaskAssignor",
    "TaskChanges",
    "TaskLayout",
    "Topology",
    "TopologyBuilder",
    "TopologyError",
    "UnknownConfigError",
    "__version__",
    "assign_group",
    "assign_tasks_to_threads",
    "build_client_state",
    "decode_answers",
    "derive_process_id",
    "ensure_internal_topics",
    "explain",
    "plan_tasks",
    "size_internal_topics",
    "summarize",
    "topology_from_data",
    "topology_from_json",
    "topology_to_data",
    "topology_to_json",
]
