"""Where the leader's ``assign()`` spends its time, step by step (one untimed-by-ratio run).

The full leader path at Kafka's ManyThreadsPerClient point (10,000 consumers) costs many times
Java's assignor + tasks-to-threads, and most of it is not the assignment: it is reading 10,000
subscriptions and writing 10,000 answers. To say which, ``timed_steps`` wraps the pipeline's
steps where ``assignor.leader.pipeline``, its ``cache`` and ``thread_cache`` and
``assignor.adapter.streams_assignor`` call them
(the functions themselves are untouched) and adds up, per step, the wall time spent inside,
plus the garbage collector's pauses (``gc.callbacks``), which land in whatever step allocates.
``adapter`` is what is left of ``assign()``: writing aiokafka's answer bytes and the
rebalance summary.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import assignor.adapter.streams_assignor as adapter_module
import assignor.leader.cache as cache_module
import assignor.leader.pipeline as pipeline_module
import assignor.leader.thread_cache as thread_cache_module

#: (module, name, label) in the order the leader runs them
STEPS = (
    (adapter_module, "assign_group", None),  # the whole pipeline; the rest of assign() is adapter
    (pipeline_module, "decode_group", "1 decode subscriptions"),
    (pipeline_module, "screen_members", "1b screen members (clones, versions)"),
    # through the leader's cache: a rebalance with the same topology and counts plans nothing
    (cache_module, "planned_tasks", "2-3 plan tasks"),
    (pipeline_module, "build_clients", "4a client states (lags)"),
    (pipeline_module, "run_task_assignor", "4b task assignor (HA)"),
    # per client, through the leader's kept splits (a repeated split is a look-up)
    (thread_cache_module, "distribute_client_tasks", "5 tasks to threads"),
    (pipeline_module, "host_maps", "6a host maps"),
    (pipeline_module, "encode_members", "6b encode answers"),
)


@contextmanager
def timed_steps() -> Iterator[dict[str, float]]:
    """Within the block, ``assign()``'s steps add their seconds to the yielded dict (ms at the
    end), with ``gc`` (collector pauses) and ``adapter`` (the rest of the pipeline call)."""
    spent: dict[str, float] = {}
    saved: list[tuple[Any, str, Any]] = []
    gc_started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_started.append(time.perf_counter())
        elif gc_started:
            spent["gc pauses (inside the steps)"] = (
                spent.get("gc pauses (inside the steps)", 0.0)
                + time.perf_counter()
                - gc_started.pop()
            )

    def wrap(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - began

        return timed

    for module, name, label in STEPS:
        original = getattr(module, name)
        saved.append((module, name, original))
        setattr(module, name, wrap(original, label or "pipeline"))
    original_assign = adapter_module.StreamsPartitionAssignor.assign
    adapter_module.StreamsPartitionAssignor.assign = wrap(  # type: ignore[method-assign]
        original_assign, "assign() total"
    )
    gc.callbacks.append(on_gc)
    try:
        yield spent
    finally:
        gc.callbacks.remove(on_gc)
        adapter_module.StreamsPartitionAssignor.assign = original_assign  # type: ignore[method-assign]
        for module, name, original in saved:
            setattr(module, name, original)
        total = spent.get("assign() total", 0.0)
        inside = spent.get("pipeline", 0.0)
        named = sum(v for k, v in spent.items() if k[0].isdigit())
        spent["pipeline, other"] = inside - named
        spent["adapter (answer bytes, summary, metrics)"] = total - inside
        spent.pop("pipeline", None)
        for key in spent:
            spent[key] *= 1000
