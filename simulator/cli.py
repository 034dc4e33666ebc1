"""``python -m simulator``: replay one scenario, print its rebalance log and its scenario row.

    python -m simulator run --family rolling_restart --seed 3 [--assignor sticky] [--param k=v]
    python -m simulator run --scenario examples/scenarios/rolling-restart.toml [--json]
    python -m simulator families [--json]

Exit status: 0 when the scenario ran (violations and non-convergence are results, printed);
2 when the scenario, family or a parameter cannot be used, with one line on stderr naming it.

aiokafka's sticky assignor (and Faust's) iterates sets of strings, so its result depends on
Python's hash seed; when one is asked for and ``PYTHONHASHSEED`` is not set, the command
re-executes itself with ``PYTHONHASHSEED=0`` so that a seed reproduces the run (the row records
the hash seed).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from simulator.engine import ReplayResult, replay, replay_command
from simulator.families import FAMILIES, FamilyError, family_params, generate, parse_params
from simulator.metrics import RebalanceRow, row_dict
from simulator.scenarios import (
    HASH_SEEDED,
    OUR_ASSIGNORS,
    PEER_ASSIGNORS,
    ScenarioError,
    load_scenario,
)
from simulator.spark import cli as spark_cli

_ASSIGNORS = (*OUR_ASSIGNORS, *PEER_ASSIGNORS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m simulator", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="replay one scenario")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--family", choices=sorted(FAMILIES))
    source.add_argument("--scenario", metavar="FILE", help="a .toml or .json scenario file")
    run.add_argument("--seed", type=int, default=0, help="family seed (default 0)")
    run.add_argument("--assignor", choices=_ASSIGNORS, help="override the scenario's assignor")
    run.add_argument("--param", action="append", default=[], metavar="K=V",
                     help="family parameter (repeatable); see `families`")
    run.add_argument("--json", action="store_true", help="one JSON document for machines")
    run.add_argument("-v", "--verbose", action="store_true", help="log the assignors' warnings")
    families = commands.add_parser("families", help="list the families and their parameters")
    families.add_argument("--json", action="store_true")
    # The Spark sweep's commands; their module imports pyspark only when one of them runs.
    spark_cli.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "families":
        return _families(args.json)
    if args.command in ("sweep", "report", "jvm-archive"):
        return spark_cli.run(args)
    logging.basicConfig(level=logging.WARNING if args.verbose else logging.CRITICAL)
    try:
        if args.family is not None:
            given = dict(_split(p) for p in args.param)
            params = parse_params(args.family, given)
            if args.assignor:
                params["assignor"] = args.assignor
            scenario = generate(args.family, params, args.seed)
            command = replay_command(scenario)
        else:
            if args.param:
                raise FamilyError("--param applies to --family, not to --scenario")
            scenario = load_scenario(args.scenario)
            if args.assignor:
                scenario = scenario.model_copy(update={"assignor": args.assignor})
            command = f"python -m simulator run --scenario {args.scenario}" + (
                f" --assignor {args.assignor}" if args.assignor else "")
    except (ScenarioError, FamilyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if scenario.assignor in HASH_SEEDED and "PYTHONHASHSEED" not in os.environ:
        _reexec_with_hash_seed(argv)
    result = replay(scenario, command=command)
    if args.json:
        print(json.dumps(_as_json(result), indent=2))
    else:
        print(render(result))
    return 0


def _split(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise FamilyError(f"--param {text!r}: expected key=value")
    return key, value


def _reexec_with_hash_seed(argv: Sequence[str] | None) -> None:
    """Pin the hash seed for a peer whose result depends on it (never returns)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    args = list(argv) if argv is not None else sys.argv[1:]
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "simulator", *args], env)


def _families(as_json: bool) -> int:
    if as_json:
        listing = {
            name: {"summary": family.summary, "params": family_params(name)}
            for name, family in FAMILIES.items()
        }
        print(json.dumps(listing, indent=2))
        return 0
    for name, family in FAMILIES.items():
        print(f"{name}: {family.summary}")
        params = ", ".join(f"{k}={v}" for k, v in family_params(name).items())
        print(f"    {params}")
    return 0


def _as_json(result: ReplayResult) -> dict[str, Any]:
    return {
        "scenario": result.scenario.to_data(),
        "rebalances": [row_dict(row) for row in result.rebalances],
        "summary": row_dict(result.summary),
        "violations": [row_dict(v) for v in result.violations],
    }


_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("gen", "generation", 4), ("outcome", "outcome", 8), ("start s", "started_s", 9),
    ("end s", "ended_s", 9), ("mem", "members", 4), ("proc", "processes", 4),
    ("leader", "leader", 10), ("assignor", "assignor", 17), ("v", "protocol_version", 2),
    ("join B", "join_bytes", 7), ("sync B", "sync_bytes", 7), ("moved", "_moved", 7),
    ("warm", "warmups", 4), ("restore", "restore_records", 9), ("ms", "assign_wall_ms", 7),
    ("follow-up", "followup", 0),
)


def _cell(row: RebalanceRow, field: str) -> str:
    if field == "_moved":
        return f"{row.active_moved}/{row.standby_moved}"
    value = getattr(row, field)
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}" if field != "assign_wall_ms" else f"{value:.2f}"
    return str(value)


def render(result: ReplayResult) -> str:
    """The rebalance log as a table, then the scenario row and the violations, for people."""
    lines = [f"scenario {result.scenario.name} ({result.scenario.assignor}); moved = "
             "active/standby; ms = wall time in assign()"]
    header = " ".join(title.rjust(width) if width else title for title, _, width in _COLUMNS)
    lines.append(header)
    for row in result.rebalances:
        cells = [_cell(row, field) for _, field, _ in _COLUMNS]
        lines.append(" ".join(c.rjust(w) if w else c for c, (_, _, w) in zip(cells, _COLUMNS,
                                                                              strict=True)))
    lines.append("")
    summary = row_dict(result.summary)
    width = max(len(k) for k in summary)
    lines.extend(f"{key.ljust(width)}  {value}" for key, value in summary.items())
    if result.violations:
        lines.append("")
        lines.append(f"violations ({len(result.violations)}):")
        for v in result.violations:
            lines.append(f"  gen {v.generation} at {v.time_s:.1f}s {v.kind}: {v.detail}")
        lines.append(f"  replay: {result.violations[0].replay}")
    return "\n".join(lines)


__all__ = ["main", "render"]
