"""Replays in a forked child per batch: the OS frees a replay's heap, not Python's collector.

A replay's cyclic garbage is its members' state, alive until the replay ends; freeing it is
pure cost to a sweep (:mod:`simulator.heap`: the collection after a 127-process Faust replay
walks and frees 1.6 M objects). So the warm executor worker (imports done, Faust's apps built)
forks a child for its batch; the child replays the jobs with the cyclic collector off
(:func:`simulator.heap.freed_at_exit`), writes each job's rows to a pipe as soon as they exist,
and leaves with ``os._exit``: its whole heap goes back to the OS at once, unwalked. The rows
are the same as inline (a replay computes nothing from the collector); each row's
``replay_wall_s`` is still the replay's own time, measured in the child around the replay.

The parent keeps every count (it adds to the driver's accumulators as each row arrives, so the
progress bar and ``cores_busy_share`` read as inline) and guards the rows:

- *Memory bound.* After each job the child reads its resident size; past
  :data:`MAX_CHILD_RSS_MB` it stops, the parent has every row so far, and a fresh child (forked
  from the parent's small heap) takes the rest. A single replay is not cut: its growth is
  bounded by the replay, and a job estimated past :data:`COLLECTED_FROM_COST` (only the
  ``large`` mix's biggest) runs with the collector on as inline. Each child's peak RSS
  (``wait4``) goes to the ``peak_rss_kb`` counter.
- *A child that dies* (a signal, the OOM killer, an exception outside a replay) loses no row
  silently: the job it was replaying becomes a row with the error and its replay command,
  as a replay that raises does, and a fresh child takes the rest; if two children in a row die
  before their first row, forking is taken to be broken here and the rest run inline.
- *Inline fallback.* Where ``os.fork`` does not exist, with ``SIMULATOR_INLINE_REPLAYS=1`` in
  the executors' environment, or with ``sweep --inline``, jobs replay in the worker itself,
  as before this module.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from simulator.spark.mix import Job, job_cost

#: A child stops taking new jobs once its resident size passes this (MB); a fresh one goes on.
MAX_CHILD_RSS_MB = 2_048
#: Jobs estimated at least this costly (:func:`~simulator.spark.mix.job_cost`) replay with the
#: collector on, as inline: the default mix's costliest job is about 26,000; only the ``large``
#: mix's groups of 1,000 members (priced with their 10,000 tasks: 18,000 to 810,000, all but
#: four round-robin ones past this) get here, whose garbage could pass the bound mid-replay.
COLLECTED_FROM_COST = 30_000
#: Environment switch for the inline fallback (``1``: no fork).
INLINE_ENV = "SIMULATOR_INLINE_REPLAYS"
#: Children dying in a row before their first row after which the rest of a batch runs inline.
DEATHS_BEFORE_INLINE = 2

#: One job -> its rows, a tuple (a child's rows are told from its wait status by that).
Runner = Callable[[Job], Any]
#: What a child that died leaves for the job it was replaying: (job, cause) -> its rows.
Mourner = Callable[[Job, str], Any]


class Counter(Protocol):
    """A driver's accumulator, or anything with ``add``."""

    def add(self, term: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ForkPolicy:
    """How an executor runs its batch: ``inline`` forces the fallback; ``children`` counts the
    children forked and ``peak_rss_kb`` takes each child's peak resident size (a max
    accumulator on the driver); ``max_rss_mb`` is the memory bound per child."""

    inline: bool = False
    max_rss_mb: int = MAX_CHILD_RSS_MB
    children: Counter | None = None
    peak_rss_kb: Counter | None = None


def forking(policy: ForkPolicy) -> bool:
    """Whether this process forks children for its replays (see the module docstring)."""
    return (not policy.inline and hasattr(os, "fork")
            and os.environ.get(INLINE_ENV, "") not in ("1", "true", "yes"))


def rss_bytes() -> int:
    """This process's resident size now (``/proc``), else its peak (``getrusage``)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _child(write_fd: int, jobs: Sequence[Job], run: Runner, max_rss: int) -> NoReturn:
    """The child's whole life: replay, send each job's rows, stop past the bound, ``_exit``."""
    from simulator.heap import freed_at_exit

    code = 0
    try:
        with os.fdopen(write_fd, "wb") as out:
            for index, job in enumerate(jobs):
                freed_at_exit(collect=job_cost(job) >= COLLECTED_FROM_COST)
                pickle.dump(run(job), out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()  # a row sent is a row kept, whatever happens to this child next
                if index + 1 < len(jobs) and rss_bytes() > max_rss:
                    break
    except BaseException:  # outside a replay (run() catches those): report it, and die
        with contextlib.suppress(Exception):
            traceback.print_exc()
            sys.stderr.flush()
        code = 1
    os._exit(code)


def _cause(status: int | None) -> str:
    if status is None:
        return "ChildDied: the forked replay child could not be waited for"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return f"ChildDied: the forked replay child was killed by {name} during this replay"
    return (f"ChildDied: the forked replay child exited with status {os.WEXITSTATUS(status)} "
            "during this replay (its traceback is in the executor's stderr)")


def _one_child(jobs: Sequence[Job], run: Runner,
               policy: ForkPolicy) -> Iterator[Any]:
    """Fork one child for ``jobs`` and yield the rows it sends, then its wait status (an int,
    or None when it cannot be waited for) as the last item."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read_fd)
        _child(write_fd, jobs, run, policy.max_rss_mb * 1024 * 1024)
    os.close(write_fd)
    if policy.children is not None:
        policy.children.add(1)
    status: int | None = None
    reaped = False
    try:
        with os.fdopen(read_fd, "rb") as source:
            while True:
                try:
                    bundle = pickle.load(source)
                except (EOFError, pickle.UnpicklingError):
                    break  # the child ended (a row cut short by its death is not a row)
                yield bundle
        try:
            _, status, usage = os.wait4(pid, 0)
            reaped = True
            if policy.peak_rss_kb is not None:
                scale = 1024 if sys.platform == "darwin" else 1  # bytes there, KB elsewhere
                policy.peak_rss_kb.add(int(usage.ru_maxrss) // scale)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): status unknown
            reaped = True
        yield status
    finally:
        if not reaped:  # the consumer left early (Spark cancelled the task): end the child
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def replays(jobs: Sequence[Job], run: Runner, mourn: Mourner,
            policy: ForkPolicy) -> Iterator[Any]:
    """Every job's rows, in order, replayed in forked children (``run`` in the child; ``mourn``
    in the parent for a job whose child died): rows out = jobs in."""
    todo = list(jobs)
    barren = 0  # children in a row that died before their first row
    while todo:
        if barren >= DEATHS_BEFORE_INLINE:
            yield from (run(job) for job in todo)
            return
        got = 0
        status: int | None = None
        for item in _one_child(todo, run, policy):
            if isinstance(item, tuple):
                got += 1
                yield item
            else:
                status = item
        if got < len(todo) and not (got > 0 and status == 0):  # died, not stopped by the bound
            yield mourn(todo[got], _cause(status))
            barren = barren + 1 if got == 0 else 0
            got += 1
        else:
            barren = 0
        todo = todo[got:]


def prepare(jobs: Sequence[Job]) -> None:
    """What the children should inherit instead of each making it again: the engine's imports
    and Faust's apps (most of a second each) for the batch's Faust jobs."""
    import json

    import simulator.engine  # noqa: F401 - imported for the children
    from simulator import faust_peer
    from simulator.families import generate

    for job in jobs:
        if job[4] != faust_peer.FAUST:
            continue
        with contextlib.suppress(Exception):  # a job that cannot generate fails in its replay
            scenario = generate(job[1], {**json.loads(job[2]), "assignor": job[4]}, job[3])
            faust_peer.prepare_app(scenario.build_topology())


__all__ = ["COLLECTED_FROM_COST", "DEATHS_BEFORE_INLINE", "INLINE_ENV", "MAX_CHILD_RSS_MB",
           "ForkPolicy", "forking", "prepare", "replays", "rss_bytes"]
