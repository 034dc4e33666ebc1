"""Consumers that never make a broker auto-create the topics they subscribe to.

aiokafka's client asks for the metadata of subscribed topics with ``allow_auto_topic_creation``
always on, so on a broker with ``auto.create.topics.enable=true`` (Kafka's default) a consumer
subscribed to a repartition topic that does not exist yet creates it, with the broker's default
partition count (often 1). That topic is then wrong for the topology and cannot be fixed without
deleting it. Kafka Streams' own consumers set ``allow.auto.create.topics=false``; aiokafka 0.14
has no such option.

:func:`disable_topic_auto_creation` gives one consumer's client a metadata update that sends
``allow_auto_topic_creation=False``: a copy of aiokafka 0.14's ``AIOKafkaClient._metadata_update``
with that one argument changed. Like ``assignor.adapter.rejoin`` (``request_rejoin``), it is a
use of aiokafka's private API, kept in one module: :func:`check_topic_auto_creation_supported`
fails at start-up, with a clear message, if a future aiokafka changes what it relies on.
A missing internal topic then stays missing, and the leader answers every member with
``INCOMPLETE_SOURCE_TOPIC_METADATA`` and a retry until the topic exists.
"""

from __future__ import annotations

import inspect
import logging
import random
import types
from typing import Any

log = logging.getLogger(__name__)


class TopicAutoCreationUnsupportedError(RuntimeError):
    """This aiokafka's client cannot be told not to auto-create topics."""


def check_topic_auto_creation_supported() -> None:
    """Fail loudly if aiokafka's private ``AIOKafkaClient._metadata_update`` has changed."""
    from aiokafka.client import AIOKafkaClient
    from aiokafka.protocol.metadata import MetadataRequest

    method = getattr(AIOKafkaClient, "_metadata_update", None)
    if not callable(method) or list(inspect.signature(method).parameters) != [
        "self",
        "cluster_metadata",
        "topics",
    ]:
        raise TopicAutoCreationUnsupportedError(
            "aiokafka's AIOKafkaClient._metadata_update(cluster_metadata, topics) has changed; "
            "consumers could auto-create internal topics. streams-assignor supports aiokafka "
            "0.14.x"
        )
    if "allow_auto_topic_creation" not in inspect.signature(MetadataRequest).parameters:
        raise TopicAutoCreationUnsupportedError(
            "aiokafka's MetadataRequest has no allow_auto_topic_creation; streams-assignor "
            "supports aiokafka 0.14.x"
        )


def disable_topic_auto_creation(consumer: Any) -> None:
    """Make ``consumer``'s metadata requests never auto-create topics (before ``start()``)."""
    client = getattr(consumer, "_client", None)
    if client is None:
        raise TopicAutoCreationUnsupportedError(f"{consumer!r} has no aiokafka client")
    client._metadata_update = types.MethodType(_metadata_update_without_creation, client)


async def _metadata_update_without_creation(
    self: Any, cluster_metadata: Any, topics: Any
) -> bool:
    """aiokafka 0.14's ``AIOKafkaClient._metadata_update`` with auto-creation off."""
    from aiokafka.client import ConnectionGroup
    from aiokafka.cluster import ClusterMetadata
    from aiokafka.errors import KafkaError
    from aiokafka.protocol.metadata import MetadataRequest

    assert isinstance(cluster_metadata, ClusterMetadata)
    metadata_request = MetadataRequest(
        list(topics) if topics else None, allow_auto_topic_creation=False
    )
    nodeids = [b.nodeId for b in self.cluster.brokers()]
    bootstrap_id = ("bootstrap", ConnectionGroup.DEFAULT)
    if bootstrap_id in self._conns:
        nodeids.append("bootstrap")
    random.shuffle(nodeids)
    for node_id in nodeids:
        conn = await self._get_conn(node_id)
        if conn is None:
            continue
        log.debug("Sending metadata request %s to node %s", metadata_request, node_id)
        try:
            metadata = await conn.send(metadata_request)
        except (TimeoutError, KafkaError) as err:
            log.warning("Unable to request metadata from node with id %s: %r", node_id, err)
            continue
        # no brokers: the topics may still be being created; keep the old metadata
        if not metadata.brokers:
            return False
        cluster_metadata.update_metadata(metadata)
        # the bootstrap connection is only kept until the cluster layout is known
        if bootstrap_id in self._conns and len(self.cluster.brokers()):
            self._conns.pop(bootstrap_id).close()
        break
    else:
        log.error("Unable to update metadata from %s", nodeids)
        cluster_metadata.failed_update(None)
        return False
    return True


__all__ = [
    "TopicAutoCreationUnsupportedError",
    "check_topic_auto_creation_supported",
    "disable_topic_auto_creation",
]
