"""The broker's configuration, without starting one: loopback only, one node, fast groups."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from tests.support.kafka.broker import _random_cluster_id, log4j2_properties, server_properties


def _parse(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


def test_every_listener_binds_loopback_on_the_given_ports(tmp_path: Path) -> None:
    props = _parse(server_properties(tmp_path, 40001, 40002))
    listeners = props["listeners"].split(",")
    assert listeners == ["PLAINTEXT://127.0.0.1:40001", "CONTROLLER://127.0.0.1:40002"]
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:40001"
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:40002"


def test_one_combined_node_with_replication_factor_one(tmp_path: Path) -> None:
    props = _parse(server_properties(tmp_path, 1, 2))
    assert props["process.roles"] == "broker,controller"
    assert props["log.dirs"] == str(tmp_path / "data")
    factors = {k: v for k, v in props.items() if k.endswith("replication.factor")}
    assert factors and set(factors.values()) == {"1"}
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert int(props["group.min.session.timeout.ms"]) <= 1000


def test_log4j_writes_to_the_given_file(tmp_path: Path) -> None:
    target = tmp_path / "server.log"
    props = _parse(log4j2_properties(target).replace(" = ", "="))
    assert props["appender.file.fileName"] == str(target)
    assert props["rootLogger.appenderRef.file.ref"] == props["appender.file.name"]


def test_cluster_ids_are_kafka_shaped_uuids() -> None:
    ids = {_random_cluster_id() for _ in range(20)}
    assert len(ids) == 20
    for cluster_id in ids:
        assert len(cluster_id) == 22
        uuid.UUID(bytes=base64.urlsafe_b64decode(cluster_id + "=="))


def test_cluster_ids_never_start_with_a_dash() -> None:
    """StorageTool would read such an id as an option (seen as a rare start-up failure)."""
    ids = [_random_cluster_id() for _ in range(5_000)]
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert len(set(ids)) == len(ids)
