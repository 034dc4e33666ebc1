"""A leader's numbering of its tasks, kept from one rebalance to the next.

A :class:`~assignor.placement.workspace.Workspace` works on tasks as small ints in Kafka's task
order. The numbering (the rank sort, the index by rank, the stateful numbers) depends on the
tasks alone, and what the changelog end sums give every workspace (each stateful task's default
lag) on the end sums alone; a leader's rebalances share both while its task plan and end offsets
stay, so a :class:`Numbering` keeps the last of each for the workspaces it is handed to.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from operator import attrgetter, is_

from protocol.ids import TaskId

_SORT_KEY = attrgetter("sort_key")  # Kafka's TaskId.compareTo
_RANK = attrgetter("_rank")  # the same order as one int, kept by unnamed tasks

Numbered = tuple[list[TaskId], dict[int, int] | None, list[int]]
#: what the end sums give every rebalance alike (:meth:`Workspace._end_defaults`): read only
EndDefaults = tuple[dict[int, int], dict[int, Mapping[int, int]], int | None]


class Numbering:
    """The last numbering of one leader's tasks, handed to each rebalance's workspace.

    Why: the numbering (the rank sort, the index by rank, the stateful numbers) depends on the
    tasks alone, which a leader's rebalances share while the topology and partition counts
    stay (its task plan is cached: ``assignor.leader.cache``), and computing it was a third of
    a small group's workspace (1,000 tasks over 9 clients). Kept as the very objects it was
    computed from: a hit needs the same ``frozenset`` of stateful tasks (immutable) and the
    same task objects in the same order (an identity test per task, in C), so the numbering is
    the one computed from equal inputs. The kept lists are shared by the workspaces, which
    never change them. One entry; a miss replaces it. The same goes for what the changelog
    end sums give every workspace (:meth:`end_defaults`), kept by the identity of the end-sums
    mapping: a holder must replace that mapping, never change it in place (the leader's
    ``LeaderCache`` keeps it so).
    """

    __slots__ = ("_all", "_ends", "_numbered", "_stateful")

    def __init__(self) -> None:
        self._all: tuple[TaskId, ...] = ()
        self._stateful: object = None
        self._numbered: Numbered | None = None
        self._ends: tuple[Mapping[TaskId, int], Numbered, EndDefaults] | None = None

    def end_defaults(
        self,
        end_sums: Mapping[TaskId, int],
        numbered: Numbered,
        compute: Callable[[Mapping[TaskId, int]], EndDefaults],
    ) -> EndDefaults:
        """``compute(end_sums)`` (:meth:`Workspace._end_defaults`), the kept one for these very
        end sums and numbering.

        Why: they depend on the changelog end sums alone, which a leader keeps as one mapping
        object while the end offsets stay (``assignor.leader.cache``, never changed in place),
        and building them was a quarter of a small group's lags (1,000 tasks over 9 clients).
        The kept values are read only: each workspace copies the map it fills.
        """
        kept = self._ends
        if kept is not None and kept[0] is end_sums and kept[1] is numbered:
            return kept[2]
        defaults = compute(end_sums)
        self._ends = (end_sums, numbered, defaults)
        return defaults

    def number(
        self, all_tasks: Collection[TaskId], stateful_tasks: Collection[TaskId]
    ) -> Numbered:
        """``number_tasks(all_tasks, stateful_tasks)``, the kept one when the inputs are it."""
        kept = self._numbered
        if (
            kept is not None
            and stateful_tasks is self._stateful
            and len(all_tasks) == len(self._all)
            and all(map(is_, all_tasks, self._all))
        ):
            return kept
        numbered = number_tasks(all_tasks, stateful_tasks)
        if type(stateful_tasks) is frozenset:
            self._all, self._stateful, self._numbered = tuple(all_tasks), stateful_tasks, numbered
        return numbered


def number_tasks(all_tasks: Collection[TaskId], stateful_tasks: Collection[TaskId]) -> Numbered:
    """The tasks in Kafka's order, each unnamed task's number by its rank (``None`` for named
    tasks), and the stateful tasks' numbers (see :class:`Workspace`)."""
    # Unnamed tasks (the usual topology) each keep one int in Kafka's task order
    # (``TaskId._rank``), read in C; sets, the sort and every look-up below then hash ints
    # instead of calling ``TaskId.__hash__`` (a Python method) once per task and per report.
    rank_index: dict[int, int] | None = None
    tasks: list[TaskId]
    stateful: list[int]
    all_ranks = task_ranks(all_tasks)
    stateful_ranks = task_ranks(stateful_tasks) if all_ranks is not None else None
    if all_ranks is not None and stateful_ranks is not None:
        rank_set = set(all_ranks)
        stateful_rank_set = set(stateful_ranks)
        if len(rank_set) == len(all_ranks) and stateful_rank_set <= rank_set:
            tasks = sorted(all_tasks, key=_RANK)
            ranks = sorted(all_ranks)
            rank_index = dict(zip(ranks, range(len(ranks)), strict=True))
            stateful = (
                list(range(len(ranks)))
                if len(stateful_rank_set) == len(rank_set)
                else [i for i, r in enumerate(ranks) if r in stateful_rank_set]
            )
    if rank_index is None:  # named tasks, repeats or a stateful task unknown
        stateful_set = set(stateful_tasks)
        all_set = set(all_tasks)
        unknown = stateful_set.difference(all_set)  # set against set: stored hashes serve
        if unknown:
            raise ValueError(f"stateful tasks {sorted(unknown)} are not among all tasks")
        # Sorting the caller's sequence when it has no repeats: the leader's is already in
        # task order, which timsort checks in n comparisons; a set's hash order costs
        # n log n comparisons of key tuples (2 ms at 6,000 tasks).
        given = all_tasks if len(all_set) == len(all_tasks) else all_set
        tasks = sorted(given, key=_SORT_KEY)
        stateful = (
            list(range(len(tasks)))  # every task stateful, the usual case: no lookups
            if len(stateful_set) == len(all_set)
            else [i for i, t in enumerate(tasks) if t in stateful_set]
        )
    return tasks, rank_index, stateful


def task_ranks(tasks: Collection[TaskId]) -> list[int] | None:
    """Every task's ``_rank``, if each has one (``None`` if any is named or lacks it)."""
    try:
        return list(map(_RANK, tasks))
    except AttributeError:
        return None


__all__ = ["EndDefaults", "Numbered", "Numbering", "number_tasks", "task_ranks"]
