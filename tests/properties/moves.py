"""The bound on active-task moves per membership change, derived from Kafka's HA assignor.

Kafka's ``HighAvailabilityTaskAssignor.assign`` (apache/kafka,
``streams/src/main/java/org/apache/kafka/streams/processor/internals/assignment/``) places
stateful actives in two steps:

1. the *balanced target* ``B``: ``assignActiveStatefulTasks`` deals the stateful tasks, in task
   order, round-robin over the clients in ``ProcessId`` order, then ``balanceTasksOverThreads``
   evens the load per thread. ``B`` depends only on the clients (their ids and thread counts)
   and the task set, never on where state lives or who ran what;
2. ``TaskMovement.assignActiveTaskMovements`` moves a task off ``B(t)`` only when ``B(t)`` is
   *not* caught up on it (``tasksToCaughtUpClients``: lag <= ``acceptable.recovery.lag``, a
   running task's lag of -2 included) and a more caught-up client exists.

So, for a stateful task ``t`` and the client ``p`` that ran it before the rebalance:

    if ``p`` is still in the group, is caught up on ``t`` (lag <= acceptable.recovery.lag), and
    ``B(t) = p``, then ``t`` stays active on ``p``.

That is "a process that stays and is caught up keeps its active tasks unless balance forces a
move", with "balance" made precise as ``B``. The bound on moves per membership change follows:
the stateful actives that change process are among the tasks whose previous owner left, or was
not caught up, or is not their balanced target, so a change moves at most
``|{t : prev(t) gone}| + |{t : prev(t) behind}| + |{t : B(t) != prev(t)}|`` of them.
It is *not* "the survivors keep everything they can": ``B`` is recomputed from the new
membership, so a join or a departure can move tasks between caught-up survivors (Kafka does the
same; stateless tasks have no stickiness at all, they go to the least-loaded client).

The check reads only the leader's own input and output (``LeaderResult.clients_before`` and
``task_assignment``), so it holds for every generation the HA assignor decided, version-probing
generations included (the leader's view then merges newer members into one client, and the bound
is about that view). ``B`` is rebuilt with the project's ``balance`` (Kafka's
``balanceTasksOverThreads``, conformance-tested against the Java); the round-robin deal is
written out here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from assignor.leader.model import LeaderResult
from assignor.placement.client_state import ClientState
from assignor.placement.high_availability import balance
from assignor.placement.workspace import Workspace
from protocol.ids import ProcessId, TaskId


def balanced_target(
    clients: Mapping[ProcessId, ClientState],
    all_tasks: Collection[TaskId],
    stateful: Collection[TaskId],
) -> dict[TaskId, ProcessId]:
    """``B``: Kafka's round-robin deal of the stateful tasks, evened out per thread."""
    ws = Workspace(clients, all_tasks, stateful, with_lags=False)
    for i, task in enumerate(ws.stateful):
        ws.assign_active(i % len(ws.pids), task)
    balance(ws, ws.active, ws.unassign_active, ws.assign_active, None)
    return {ws.tasks[t]: ws.pids[c] for c in range(len(ws.pids)) for t in ws.active[c]}


def unforced_moves(result: LeaderResult, acceptable_recovery_lag: int) -> list[str]:
    """Stateful actives the HA assignor took from a caught-up previous owner that is also their
    balanced target (the module docstring's rule); empty when the rule holds or does not apply
    (another assignor, an error answer)."""
    assignment, layout = result.task_assignment, result.layout
    before = result.clients_before
    if result.assignor != "high_availability" or assignment is None or layout is None:
        return []
    stateful = frozenset(layout.stateful)
    target = balanced_target(before, layout.tasks, stateful)
    found = []
    for pid, client in sorted(before.items(), key=lambda item: item[0].sort_key):
        after = assignment.clients.get(pid)
        for task in sorted(client.previous_active & stateful, key=lambda t: t.sort_key):
            caught_up = client.lag_for(task) <= acceptable_recovery_lag
            if caught_up and target.get(task) == pid and (after is None
                                                          or task not in after.active):
                owner = next((str(p) for p, c in assignment.clients.items() if task in c.active),
                             "nobody")
                found.append(f"{task} left {pid} (caught up, lag {client.lag_for(task)}, and its "
                             f"balanced target) for {owner}")
    return found

