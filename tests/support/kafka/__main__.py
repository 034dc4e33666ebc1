"""``python -m tests.support.kafka up|down|status``: a broker that outlives the command.

The running broker is remembered in ``tests/support/kafka/target/broker.json`` so that ``down`` and
``status`` find it. The broker picks a free port, so ``up`` ends with a ready-to-paste line,
``export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:PORT``, and writes the same line to
``tests/support/kafka/target/bootstrap.env`` (``source`` it from another shell); the examples and
the test suite read that variable. ``STREAMS_ASSIGNOR_KAFKA_STATE`` moves both files elsewhere
(a test starts its own broker there without touching a developer's).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from tests.support.kafka.broker import HERE, KAFKA_VERSION, Broker, BrokerError, start

#: The variable the examples, the README's quick start and the test suite read.
BOOTSTRAP_VARIABLE = "KAFKA_BOOTSTRAP_SERVERS"


def state_dir() -> Path:
    """Where ``up`` records its broker; ``STREAMS_ASSIGNOR_KAFKA_STATE`` overrides it."""
    return Path(os.environ.get("STREAMS_ASSIGNOR_KAFKA_STATE") or HERE / "target")


def _state_file() -> Path:
    return state_dir() / "broker.json"


def env_file() -> Path:
    """The ``export KAFKA_BOOTSTRAP_SERVERS=...`` line of the running broker, for ``source``."""
    return state_dir() / "bootstrap.env"


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is under it (shorter to paste)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def export_line(bootstrap: str) -> str:
    return f"export {BOOTSTRAP_VARIABLE}={bootstrap}"


def _load() -> Broker | None:
    try:
        data = json.loads(_state_file().read_text())
    except (FileNotFoundError, ValueError):
        return None
    return Broker(
        pid=int(data["pid"]),
        port=int(data["port"]),
        controller_port=int(data["controller_port"]),
        directory=Path(data["directory"]),
    )


def remember(broker: Broker) -> None:
    """Record ``broker`` as the running one, for ``down`` and ``status``."""
    _state_file().parent.mkdir(parents=True, exist_ok=True)
    state = {
        "pid": broker.pid,
        "port": broker.port,
        "controller_port": broker.controller_port,
        "directory": str(broker.directory),
        "bootstrap": broker.bootstrap,
        "version": KAFKA_VERSION,
    }
    _state_file().write_text(json.dumps(state, indent=2) + "\n")


def _forget() -> None:
    _state_file().unlink(missing_ok=True)
    env_file().unlink(missing_ok=True)


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
        remember(broker)
        took = time.monotonic() - began
        print(f"Kafka {KAFKA_VERSION} started in {took:.1f}s (pid {broker.pid})")
    env_file().write_text(export_line(broker.bootstrap) + "\n")
    print(f"log: {broker.log_file}")
    print(f"paste the next line into your shell, or run: source {_shown(env_file())}")
    print(export_line(broker.bootstrap))
    return 0


def down() -> int:
    broker = _load()
    if broker is None:
        print("no broker recorded; nothing to stop")
        return 0
    if broker.alive() and not broker.is_ours():
        print(f"pid {broker.pid} is no longer our broker; forgetting it without a signal")
        _forget()
        return 0
    broker.stop()
    _forget()
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
