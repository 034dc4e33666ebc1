"""``sweep`` and ``report``: the command line of the Spark sweep.

    python -m simulator.spark sweep [--mix default] [--families F ...] [--assignors A ...]
                                    [--scenarios N] [--seed S] [--out DIR] [--master URL]
    python -m simulator.spark report DIR
    python -m simulator.spark jvm-archive

``sweep`` runs a mix (each scenario with every assignor), writes Parquet and the report under
``DIR`` (default ``out/simulate``) and ends with the report's path and a headline table.
``report`` rebuilds ``DIR/report`` from the Parquet alone (Spark computes the summaries again).
``jvm-archive`` builds the driver JVM's class-data archive (:mod:`simulator.spark.jvm_archive`;
``make install`` runs it): later sweeps start Spark about 2 s sooner.

Importing this module imports no pyspark (the sweep loads it when it runs), so another command
line can offer these subcommands: call :func:`add_commands` on its subparsers and :func:`run` with
the parsed arguments.

Exit status: 0 when the sweep ran (violations and errors of scenarios are results, in the
report); 2 for a bad mix, family, assignor or count, with one line on stderr; 1 when
``jvm-archive`` could not build the archive (the reason on stderr; sweeps run without it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulator.spark.mix import MAX_JOBS

DEFAULT_OUT = Path("out/simulate")


def _names(text: str) -> list[str]:
    return [part for part in text.replace(",", " ").split() if part]


def add_commands(commands: Any) -> None:
    """Add ``sweep`` and ``report`` to an ``argparse`` subparsers object."""
    sweep = commands.add_parser("sweep", help="replay a mix of scenarios on Spark, then report")
    sweep.add_argument("--mix", default="default", help="default or large (default: default)")
    sweep.add_argument("--families", nargs="+", default=[], metavar="F",
                       help="families to run (default: all; commas or spaces)")
    sweep.add_argument("--assignors", nargs="+", default=[], metavar="A",
                       help="assignors to run (default: all; commas or spaces)")
    sweep.add_argument("--scenarios", type=int, default=None, metavar="N",
                       help="scenarios (each runs with every assignor; default: the mix's)")
    sweep.add_argument("--seed", type=int, default=0, help="mix seed (default 0)")
    sweep.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                       help=f"output folder (default {DEFAULT_OUT})")
    sweep.add_argument("--master", default=None, metavar="URL",
                       help="Spark master (default: spark-submit's, else local[*])")
    sweep.add_argument("--batch", type=int, default=MAX_JOBS, metavar="N",
                       help=f"most replays per Spark task (default {MAX_JOBS})")
    sweep.add_argument("--inline", action="store_true",
                       help="replay in the executor workers, not in a child forked per batch "
                            "(also SIMULATOR_INLINE_REPLAYS=1 in the executors' environment)")
    report = commands.add_parser("report", help="rebuild DIR/report from DIR's Parquet")
    report.add_argument("dir", type=Path, metavar="DIR")
    report.add_argument("--master", default=None, metavar="URL")
    commands.add_parser("jvm-archive",
                        help="build the driver JVM's class-data archive (a faster Spark start)")


def _print_result(index: Path, summary: dict[str, Any]) -> None:
    from simulator.report.render import short_table, text_table

    totals = summary["totals"]
    print(f"report: {index.resolve()}")
    print(f"{totals['scenarios']:,} scenarios, {totals['replays']:,} replays, "
          f"{totals['errors']:,} errors, {totals['violations']:,} violations, "
          f"{totals['not_converged']:,} not converged")
    print(text_table(short_table(summary)))


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``sweep`` or ``report`` command."""
    from simulator.spark.mix import MixError

    if args.command == "jvm-archive":
        from simulator.spark.jvm_archive import ArchiveError, build
        from simulator.spark.session import DRIVER_JAVA_OPTIONS

        try:
            print(f"jvm-archive: {build(DRIVER_JAVA_OPTIONS)}")
        except ArchiveError as exc:
            print(f"error: jvm-archive: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "sweep":
        from simulator.spark.sweep import SweepOptions, sweep

        if args.scenarios is not None and args.scenarios < 1:
            print("error: --scenarios must be at least 1", file=sys.stderr)
            return 2
        if args.batch < 1:
            print("error: --batch must be at least 1", file=sys.stderr)
            return 2
        options = SweepOptions(
            mix=args.mix,
            families=tuple(n for text in args.families for n in _names(text)),
            assignors=tuple(n for text in args.assignors for n in _names(text)),
            scenarios=args.scenarios, seed=args.seed, out=args.out, master=args.master,
            max_batch=args.batch, inline=args.inline,
        )
        try:
            result = sweep(options)
        except MixError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        _print_result(result.report / "index.html", result.summary)
        return 0
    from simulator.spark.session import session
    from simulator.spark.summary import summarize_and_render

    if not (args.dir / "scenarios").is_dir():
        print(f"error: {args.dir} holds no sweep (no scenarios/ table)", file=sys.stderr)
        return 2
    with session(args.master, app_name="streams-assignor report") as spark:
        summary, index = summarize_and_render(spark, args.dir)
    _print_result(index, summary)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulator.spark",
                                     description=(__doc__ or "").split("\n")[0])
    add_commands(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(argv))


__all__ = ["DEFAULT_OUT", "add_commands", "main", "run"]
