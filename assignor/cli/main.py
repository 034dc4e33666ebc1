"""The command line: the leader's pipeline on a group described in a JSON file, and a live
group as its coordinator holds it.

``python -m assignor assign --input group.json|- [--explain] [--output FILE]`` prints the
assignment as JSON (format: README, section "python -m assignor"). A bad input file exits with
status 2 and one line naming the JSON path at fault; a group-level error of the assignment
itself (missing topics, shutdown requested) is an answer, not a failure, and exits 0.

``python -m assignor describe --bootstrap HOST:PORT --group G [--app FILE [--explain]
[--save-input FILE]]`` prints a live group's members, subscriptions and assignments as JSON
(``assignor.cli.describe``). An unreachable broker or an unknown group exits 2 with one line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from assignor.cli.group_input import (
    GroupDescription,
    GroupInputError,
    read_group_json,
    unknown_reported_tasks,
)
from assignor.cli.render import member_to_data, placements_to_data
from assignor.leader.model import LeaderResult
from assignor.leader.pipeline import assign_group
from protocol.codec import Codec

EXIT_BAD_INPUT = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "describe":
        if args.explain and args.app is None:
            parser.error(
                "--explain needs --app FILE: the reasons depend on the topology and config, "
                "which a live group does not carry"
            )
        return _describe(args)
    return _assign(args)


def _assign(args: argparse.Namespace) -> int:
    try:
        if args.input == "-":
            text = sys.stdin.read()
        else:
            with open(args.input, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        print(f"error: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except UnicodeDecodeError as exc:
        print(f"error: {args.input} is not UTF-8 text: {exc.reason}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        description = read_group_json(text)
    except GroupInputError as exc:
        print(f"error: {args.input}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for member_id, tasks in unknown_reported_tasks(description).items():
        shown = ", ".join(str(t) for t in tasks[:10])
        more = f" and {len(tasks) - 10} more" if len(tasks) > 10 else ""
        print(
            f"warning: member {member_id!r} reports offset sums for tasks the topology does not "
            f"have ({shown}{more}); the leader ignores them",
            file=sys.stderr,
        )
    result = assign_group(
        description.topology, description.config, description.group, description.codec
    )
    data = result_to_data(result, description, with_explain=args.explain)
    return _write(json.dumps(data, indent=2) + "\n", args.output)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m assignor", description="Kafka Streams' partition assignment, offline."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    assign = commands.add_parser(
        "assign", help="run the group leader's assignment on a JSON description of a group"
    )
    assign.add_argument(
        "--input", required=True, help="the group description (JSON); '-' reads standard input"
    )
    assign.add_argument("--output", help="write the result here instead of standard output")
    assign.add_argument(
        "--explain", action="store_true", help="say for each task why it went where it went"
    )
    assign.add_argument("-v", "--verbose", action="store_true", help="log the leader's steps")
    describe = commands.add_parser(
        "describe", help="decode a live group's subscriptions and assignments (DescribeGroups)"
    )
    describe.add_argument("--bootstrap", required=True, help="HOST:PORT of a broker")
    describe.add_argument("--group", required=True, help="the group id (the application id)")
    describe.add_argument(
        "--app",
        help="JSON file with the application's 'topology' (and 'config'): adds lags, a replay "
        "of the leader's decision and --explain",
    )
    describe.add_argument(
        "--explain", action="store_true", help="with --app: why each task went where it went"
    )
    describe.add_argument(
        "--save-input", help="with --app: write this group as 'assign --input' reads it"
    )
    describe.add_argument("--output", help="write the result here instead of standard output")
    describe.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for the cluster (30)"
    )
    describe.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    return parser


def _describe(args: argparse.Namespace) -> int:
    """Fetch (adapter, aiokafka), then decode and render (pure)."""
    from assignor.adapter.admin import fetch_changelog_end_offsets
    from assignor.adapter.group_description import GroupDescriptionError, describe_live_group
    from assignor.cli.describe import assign_input, describe_data, read_app_json
    from assignor.topology.data_form import topology_from_data
    from assignor.topology.model import TopologyError

    app: dict[str, Any] | None = None
    if args.app is not None:
        try:
            with open(args.app, encoding="utf-8") as handle:
                app = read_app_json(handle.read())
            topology = topology_from_data(app["topology"])
        except OSError as exc:
            print(f"error: cannot read {args.app}: {exc.strerror}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except GroupInputError as exc:
            print(f"error: {args.app}: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except TopologyError as exc:
            print(f"error: {args.app}: topology: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT

    async def fetch() -> tuple[Any, Any]:
        group = await describe_live_group(args.bootstrap, args.group, timeout_s=args.timeout)
        ends = None
        if app is not None:
            ends = await fetch_changelog_end_offsets(
                args.bootstrap, topology, args.group, timeout_s=args.timeout
            )
        return group, ends

    try:
        group, end_offsets = asyncio.run(fetch())
    except GroupDescriptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not group.members:
        print(
            f"error: group {args.group!r} has no members (state {group.state}); nothing to "
            "describe",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    replay = assign_input(group, app, end_offsets) if app is not None else None
    try:
        data = describe_data(group, Codec(), replay_input=replay, with_explain=args.explain)
    except GroupInputError as exc:
        print(f"error: {args.app} with group {args.group!r}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.save_input is not None and replay is not None:
        with open(args.save_input, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(replay, indent=2) + "\n")
    return _write(json.dumps(data, indent=2) + "\n", args.output)


def _write(rendered: str, output: str | None) -> int:
    """Print or save the result; the exit status (an unwritable ``--output`` is a bad
    argument, exit 2 with one line, like a bad input file, not a traceback)."""
    if output is None:
        sys.stdout.write(rendered)
        return 0
    try:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(rendered)
    except OSError as exc:
        print(f"error: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


# --- the result as JSON data -----------------------------------------------------------------


def result_to_data(
    result: LeaderResult, description: GroupDescription, *, with_explain: bool = False
) -> dict[str, Any]:
    """The leader's decision as plain data; ``json.dumps`` takes it as is."""
    data: dict[str, Any] = {
        "error": result.error.name,
        "detail": result.detail,
        "assignor": result.assignor,
        "used_version": result.used_version,
        "commonly_supported_version": result.commonly_supported_version,
        "followup": result.followup,
        "rejected_members": dict(sorted(result.rejected.items())),
        "refused_members": dict(sorted(result.refused.items())),
        "members": {m: member_to_data(r) for m, r in sorted(result.members.items())},
    }
    if with_explain:
        data["explain"] = placements_to_data(result, description.config)
    return data


__all__ = ["main", "result_to_data"]
