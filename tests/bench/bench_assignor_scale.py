"""The high-availability assignor on Kafka's ``StreamsAssignmentScaleTest`` grid, Python vs Java.

Grid (HighAvailabilityTaskAssignor rows of the Kafka test): 6,000 partitions / 2 clients /
1 standby; 1,000 / 1,000 clients / 1 standby; 1,000 / 100 clients / 50 standbys; 1,000 / 10
clients / 1,000 threads each / 1 standby. As in the Kafka test: one subtopology, every task
stateful, every changelog partition at end offset 100,000; the *first* assignment starts from
nothing, the *second* from what the first decided (actives report -2, standbys 0).

For each point and round it prints the Python time of the task assignment (median of a few runs,
pre-built client states), the Java time of ``HighAvailabilityTaskAssignor.assign`` measured in
the harness JVM after JIT warm-up, their ratio, the time to spread every client's tasks over its
threads on each side (Python ``assignor.placement.threads.distribute_client_tasks``; Java
``StreamsPartitionAssignor.assignTasksToThreads``, three passes per client as the leader runs it,
timed in the same JVM runs right after ``assign``), the ratio of the totals, Python (assignment +
threads) over Java (assignment + threads), and Python's peak traced memory of the assignment.
Medians of three runs throughout. ``--quick`` runs the
smaller points only; ``--no-java`` skips the JVM; ``--verify`` also checks that both sides
decided the same assignment at every point (slow: Kafka's assignor runs twice more). Through
``make bench`` use the environment instead: ``BENCH_QUICK=1``, ``BENCH_NO_JAVA=1``,
``BENCH_VERIFY=1``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from assignor.config import AssignorConfig
from assignor.placement.client_state import ClientState, ConsumerReport, build_client_state
from assignor.placement.high_availability import HighAvailabilityTaskAssignor
from assignor.placement.task_assignor import TaskAssignment
from protocol.ids import ProcessId, TaskId

END_OFFSET = 100_000
GRID = (
    ("LargePartitionCount", 6_000, 2, 1, 1),
    ("LargeNumConsumers", 1_000, 1_000, 1, 1),
    ("ManyStandbys", 1_000, 100, 1, 50),
    ("ManyThreadsPerClient", 1_000, 10, 1_000, 1),
)


def _clients(
    n_clients: int, threads: int, tasks: list[TaskId], previous: TaskAssignment | None
) -> dict[ProcessId, ClientState]:
    end = dict.fromkeys(tasks, END_OFFSET)
    clients = {}
    for c in range(n_clients):
        pid = ProcessId.for_int(c)
        offsets: dict[TaskId, int] = {}
        if previous is not None:
            state = previous.clients[pid]
            offsets = {t: 0 for t in state.standby} | {t: -2 for t in state.active}
        consumers = [
            ConsumerReport(f"consumer-{c}-{i}", offsets if i == 0 else {}) for i in range(threads)
        ]
        clients[pid] = build_client_state(pid, consumers, {}, end)
    return clients


def _java_request(
    clients: Mapping[ProcessId, ClientState], tasks: list[TaskId], config: AssignorConfig
) -> dict[str, Any]:
    def consumers(state: ClientState) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for consumer in state.consumers:
            reported = state.previous_tasks_by_consumer.get(consumer, frozenset())
            offsets = {str(t): (-2 if t in state.previous_active else 0) for t in reported}
            out.append({"id": consumer, "offsets": offsets})
        return out

    return {
        "clients": [
            {"pid": str(pid), "consumers": consumers(state), "tags": {}}
            for pid, state in clients.items()
        ],
        "tasks": [str(t) for t in tasks],
        "stateful": [str(t) for t in tasks],
        "end": {str(t): END_OFFSET for t in tasks},
        "config": {"num.standby.replicas": config.num_standby_replicas},
    }


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _threads_ms(result: TaskAssignment, repeats: int) -> float | None:
    try:
        from assignor.placement.threads import distribute_client_tasks
    except ImportError:
        return None

    def spread() -> None:
        for state in result.clients.values():
            distribute_client_tasks(state)

    return _median_ms(spread, repeats)


def _same(result: TaskAssignment, java: dict[str, Any]) -> bool:
    if result.probing_rebalance_needed != java["probing"]:
        return False
    for pid, state in result.clients.items():
        theirs = java["clients"][str(pid)]
        mine = {
            "active": state.active,
            "standby": state.standby,
            "warmups": result.warmups.get(pid, frozenset()),
        }
        if any(sorted(map(str, mine[k])) != sorted(theirs[k]) for k in mine):
            return False
    return True


def _flag(name: str) -> bool:
    """``--name`` on the command line, or ``BENCH_NAME=1`` (``make bench`` passes no args)."""
    env = "BENCH_" + name.upper().replace("-", "_")
    return f"--{name}" in sys.argv or os.environ.get(env, "") not in ("", "0")


def main() -> None:
    quick = _flag("quick")
    verify = _flag("verify")
    use_java = not _flag("no-java")
    harness = None
    if use_java:
        # Run directly (not through tests/bench/run.py), the repository root is not importable.
        root = str(Path(__file__).resolve().parents[2])
        if root not in sys.path:
            sys.path.insert(0, root)
        try:
            from tests.support.jvm import JavaHarness, build_harness

            harness = JavaHarness(build_harness())
        except Exception as error:  # the bench still prints the Python side
            print(f"(Java reference unavailable: {error})")
    assignor = HighAvailabilityTaskAssignor()
    header = (
        f"{'point':<22}{'round':>6}{'python ms':>11}{'java ms':>10}{'ratio':>7}"
        f"{'threads ms':>12}{'java thr ms':>13}{'total ratio':>13}{'peak MiB':>10}"
    )
    print(header)
    try:
        for name, partitions, n_clients, threads, standbys in GRID:
            if quick and partitions * n_clients > 200_000:
                continue
            tasks = [TaskId(0, p) for p in range(partitions)]
            config = AssignorConfig.model_validate({"num.standby.replicas": standbys})
            previous: TaskAssignment | None = None
            for round_no in (1, 2):
                clients = _clients(n_clients, threads, tasks, previous)

                def run(
                    clients: dict[ProcessId, ClientState] = clients,
                    tasks: list[TaskId] = tasks,
                    config: AssignorConfig = config,
                ) -> TaskAssignment:
                    return assignor.assign(clients, tasks, tasks, config)

                result = run()
                python_ms = _median_ms(run, 3)
                tracemalloc.start()
                run()
                peak = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                threads_ms = _threads_ms(result, 3)
                java_ms: float | None = None
                java_threads_ms: float | None = None
                if harness is not None:
                    request = _java_request(clients, tasks, config)
                    request["bench"] = {"warmup": 3, "runs": 3}
                    answer = harness.call("ha", request, timeout=1800)
                    java_ms = statistics.median(answer["millis"])
                    java_threads_ms = statistics.median(answer["threads_millis"])
                    if verify:
                        del request["bench"]
                        same = _same(result, harness.call("ha", request, timeout=1800))
                        verdict = "equal to" if same else "DIFFERS FROM"
                        print(f"  ({name} round {round_no}: {verdict} Kafka's assignment)")
                java_text = f"{java_ms:>10.1f}" if java_ms is not None else f"{'-':>10}"
                ratio = f"{python_ms / java_ms:>7.2f}" if java_ms else f"{'-':>7}"
                thread_text = f"{threads_ms:>12.1f}" if threads_ms is not None else f"{'-':>12}"
                java_threads_text = (
                    f"{java_threads_ms:>13.1f}" if java_threads_ms is not None else f"{'-':>13}"
                )
                total = f"{'-':>13}"
                if java_ms is not None and java_threads_ms is not None and threads_ms is not None:
                    java_total = java_ms + java_threads_ms
                    if java_total:
                        total = f"{(python_ms + threads_ms) / java_total:>13.2f}"
                print(
                    f"{name:<22}{round_no:>6}{python_ms:>11.1f}{java_text}{ratio}"
                    f"{thread_text}{java_threads_text}{total}{peak:>10.1f}",
                    flush=True,
                )
                previous = result
    finally:
        if harness is not None:
            harness.close()


if __name__ == "__main__":
    main()
