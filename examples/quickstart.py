"""Quick start: one application instance, two stream threads, a join and a count with standbys.

Run against `make kafka-up`'s broker: `.venv/bin/python -m examples.quickstart [APP_ID]`
(KAFKA_BOOTSTRAP_SERVERS is what `make kafka-up` printed). It creates its input topics, joins the
group with two consumers, prints what each thread was given, and leaves.
"""

from __future__ import annotations

import asyncio
import os
import sys

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from assignor import (
    AssignorConfig,
    MemberAssignment,
    StreamsPartitionAssignor,
    StreamsProcess,
    Topology,
    TopologyBuilder,
)
from protocol import HostInfo, TaskId


def build_topology(app_id: str) -> Topology:
    """orders JOIN customers (copartitioned, with a logged store), then a count per region."""
    builder = TopologyBuilder(app_id)
    orders, customers = f"{app_id}-orders", f"{app_id}-customers"
    builder.add_source("orders", orders).add_source("customers", customers)
    builder.add_processor("join", "orders", "customers").add_state_store("joined", "join")
    builder.copartition(orders, customers)
    builder.add_sink("by-region", f"{app_id}-by-region-repartition", "join")
    builder.add_source("regions", f"{app_id}-by-region-repartition")
    builder.add_processor("count", "regions").add_state_store("counts", "count")
    return builder.build()


def local_state() -> dict[TaskId, int]:
    """What your state directory holds: changelog offset sum per task (StateDirectory does it)."""
    return {}


async def create_source_topics(bootstrap: str, topology: Topology) -> None:
    """Source topics are yours to create (4 partitions here); connect() makes the internal ones."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = sorted(set(topology.external_source_topics) - existing)
        if wanted:
            await admin.create_topics([NewTopic(topic, 4, 1) for topic in wanted])
    finally:
        await admin.close()


async def main(bootstrap: str, app_id: str = "quickstart") -> dict[int, MemberAssignment]:
    threads = 2
    topology = build_topology(app_id)
    await create_source_topics(bootstrap, topology)
    process = StreamsProcess(
        topology,
        AssignorConfig.model_validate({"num.standby.replicas": 1}),
        endpoint=HostInfo("127.0.0.1", 8080),  # for interactive queries' host maps
        state=local_state,
    )
    await process.connect(bootstrap)  # internal topics, changelog end offsets before every join
    latest: dict[int, MemberAssignment] = {}
    everyone_assigned = asyncio.Event()

    def on_rebalance(assignor: StreamsPartitionAssignor, assignment: MemberAssignment) -> None:
        latest[assignor.index] = assignment
        print(f"thread {assignor.index}: active {sorted(map(str, assignment.active_tasks))}, "
              f"standby {sorted(map(str, assignment.standby_tasks))}, "
              f"restore {sorted(map(str, assignment.restore_partitions))}")
        if len(latest) == threads:
            everyone_assigned.set()

    process.add_listener(on_rebalance)
    consumers = [process.create_consumer(bootstrap) for _ in range(threads)]
    try:
        for consumer in consumers:
            await consumer.start()
            process.subscribe(consumer)
        # aiokafka joins the group in the background; a real app would now loop on getmany()
        await asyncio.wait_for(everyone_assigned.wait(), timeout=60)
    finally:
        for consumer in consumers:
            await consumer.stop()
        await process.close()
    return latest


if __name__ == "__main__":
    asyncio.run(main(os.environ["KAFKA_BOOTSTRAP_SERVERS"], *sys.argv[1:2]))  # [APP_ID]
