"""The command line: run the leader's pipeline on a group described in a JSON file.

``python -m assignor assign --input group.json|- [--explain] [--output FILE]`` prints the
assignment as JSON (format: README, section "python -m assignor"). A bad input file exits with
status 2 and one line naming the JSON path at fault; a group-level error of the assignment
itself (missing topics, shutdown requested) is an answer, not a failure, and exits 0.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from assignor.cli.group_input import (
    GroupDescription,
    GroupInputError,
    read_group_json,
    unknown_reported_tasks,
)
from assignor.leader.explain import explain
from assignor.leader.pipeline import LeaderResult, MemberResult, assign_group
from assignor.member import align_active_tasks
from protocol.ids import HostInfo, TopicPartition
from protocol.messages import NO_FOLLOWUP_REBALANCE

EXIT_BAD_INPUT = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
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
    rendered = json.dumps(data, indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(rendered)
    else:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(rendered)
    return 0


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
    return parser


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
        "members": {m: _member(r) for m, r in sorted(result.members.items())},
    }
    if with_explain:
        data["explain"] = [
            {
                "task": str(p.task),
                "role": p.role,
                "process_id": str(p.process_id),
                "member": p.member,
                "reason": p.reason,
            }
            for p in explain(result, description.config)
        ]
    return data


def _member(result: MemberResult) -> dict[str, Any]:
    info = result.info
    active = align_active_tasks(info.active_tasks, result.partitions) or {}
    return {
        "error": info.error_code.name,
        "version": info.version,
        "commonly_supported_version": info.commonly_supported_version,
        "partitions": [str(tp) for tp in sorted(result.partitions)],
        "active_tasks": {str(t): _partitions(p) for t, p in sorted(active.items())},
        "standby_tasks": {str(t): _partitions(p) for t, p in sorted(info.standby_tasks.items())},
        "partitions_by_host": _hosts(info.partitions_by_host),
        "standby_partitions_by_host": _hosts(info.standby_partitions_by_host),
        "next_rebalance_ms": (
            None if info.next_rebalance_ms == NO_FOLLOWUP_REBALANCE else info.next_rebalance_ms
        ),
        "user_data_hex": result.user_data.hex(),
    }


def _partitions(partitions: Sequence[TopicPartition] | frozenset[TopicPartition]) -> list[str]:
    return [str(tp) for tp in sorted(partitions)]


def _hosts(by_host: Mapping[HostInfo, frozenset[TopicPartition]]) -> dict[str, list[str]]:
    return {
        f"{host.host}:{host.port}": _partitions(parts)
        for host, parts in sorted(by_host.items(), key=lambda item: (item[0].host, item[0].port))
    }


__all__ = ["main", "result_to_data"]
