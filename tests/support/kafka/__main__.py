"""``python -m tests.support.kafka up|down|status``: a broker that outlives the command.

The running broker is remembered in ``tests/support/kafka/target/broker.json`` so that ``down`` and
``status`` find it; ``up`` prints the ``KAFKA_BOOTSTRAP_SERVERS`` value that points the suite at it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tests.support.kafka.broker import HERE, KAFKA_VERSION, Broker, BrokerError, start

STATE = HERE / "target" / "broker.json"


def _load() -> Broker | None:
    try:
        data = json.loads(STATE.read_text())
    except (FileNotFoundError, ValueError):
        return None
    return Broker(
        pid=int(data["pid"]),
        port=int(data["port"]),
        controller_port=int(data["controller_port"]),
        directory=Path(data["directory"]),
    )


def _save(broker: Broker) -> None:
    STATE.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "pid": broker.pid,
        "port": broker.port,
        "controller_port": broker.controller_port,
        "directory": str(broker.directory),
        "bootstrap": broker.bootstrap,
        "version": KAFKA_VERSION,
    }
    STATE.write_text(json.dumps(state, indent=2) + "\n")


def _running() -> Broker | None:
    broker = _load()
    if broker is not None and broker.alive() and broker.is_ours():
        return broker
    return None


def up() -> int:
    broker = _running()
    if broker is not None:
        print(f"Kafka {KAFKA_VERSION} already running (pid {broker.pid})")
    else:
        began = time.monotonic()
        broker = start(detach=True)
        _save(broker)
        took = time.monotonic() - began
        print(f"Kafka {KAFKA_VERSION} started in {took:.1f}s (pid {broker.pid})")
    print(f"log: {broker.log_file}")
    print(f"export KAFKA_BOOTSTRAP_SERVERS={broker.bootstrap}")
    return 0


def down() -> int:
    broker = _load()
    if broker is None:
        print("no broker recorded; nothing to stop")
        return 0
    if broker.alive() and not broker.is_ours():
        print(f"pid {broker.pid} is no longer our broker; forgetting it without a signal")
        STATE.unlink(missing_ok=True)
        return 0
    broker.stop()
    STATE.unlink(missing_ok=True)
    print(f"Kafka stopped (pid {broker.pid})")
    return 0


def status() -> int:
    broker = _running()
    if broker is None:
        print("no broker running")
        return 1
    print(f"running: pid {broker.pid}, bootstrap {broker.bootstrap}, log {broker.log_file}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.kafka", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status"])
    args = parser.parse_args(argv)
    try:
        return {"up": up, "down": down, "status": status}[args.command]()
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
