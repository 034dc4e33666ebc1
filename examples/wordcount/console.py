"""Feed the word count and read its result, without Kafka's console tools.

    python -m examples.wordcount.console feed --app-id wc "to be or not to be"   # or lines on stdin
    python -m examples.wordcount.console counts --app-id wc                      # {"be": 2, ...}

``feed`` creates the input and output topics if the application has not yet, and sends each line
to the input topic, spread over its partitions. ``counts`` reads the output topic from its start
to its current end and prints the latest count of every word as one JSON object: what the
application has counted so far (run it again to see more).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from examples.wordcount.app import add_common_arguments, create_topics, parse_common

#: bound on reading the output topic to its end
READ_TIMEOUT_S = 30.0


async def feed(bootstrap: str, app_id: str, partitions: int, lines: list[str]) -> int:
    """Send ``lines`` to ``<app_id>-text``, round-robin over its partitions; returns the count."""
    await create_topics(bootstrap, app_id, partitions)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for number, line in enumerate(lines):
            await producer.send(f"{app_id}-text", line.encode(), partition=number % partitions)
        await producer.flush()
    finally:
        await producer.stop()
    return len(lines)


async def counts(bootstrap: str, app_id: str, partitions: int) -> dict[str, int]:
    """The latest count per word on ``<app_id>-counts``, read up to its end at the call."""
    reader = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await reader.start()
    latest: dict[str, int] = {}
    try:
        topic = f"{app_id}-counts"
        if topic not in await reader.topics():
            return latest
        wanted = [TopicPartition(topic, p) for p in range(partitions)]
        reader.assign(wanted)
        await reader.seek_to_beginning(*wanted)
        ends = await reader.end_offsets(wanted)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READ_TIMEOUT_S
        while [tp for tp in wanted if await reader.position(tp) < ends[tp]]:
            if loop.time() > deadline:
                raise TimeoutError(f"{topic} not read to its end within {READ_TIMEOUT_S} s")
            batch = await reader.getmany(timeout_ms=500, max_records=10_000)
            for records in batch.values():
                for record in records:
                    if record.key is not None and record.value is not None:
                        latest[record.key.decode()] = int(record.value)
    finally:
        await reader.stop()
    return dict(sorted(latest.items()))


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.wordcount.console")
    commands = parser.add_subparsers(dest="command", required=True)
    to_feed = commands.add_parser("feed", help="send lines (arguments, else stdin) to the input")
    add_common_arguments(to_feed)
    to_feed.add_argument("lines", nargs="*", metavar="LINE")
    to_read = commands.add_parser("counts", help="print the latest count of every word as JSON")
    add_common_arguments(to_read)
    args = parse_common(parser, argv)
    if args.command == "feed":
        lines = args.lines or [line.rstrip("\n") for line in sys.stdin if line.strip()]
        sent = await feed(args.bootstrap, args.app_id, args.partitions, lines)
        print(f"sent {sent} lines to {args.app_id}-text")
    else:
        print(json.dumps(await counts(args.bootstrap, args.app_id, args.partitions)))


if __name__ == "__main__":
    asyncio.run(main())
