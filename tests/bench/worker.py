"""A long-lived bench worker: one side of a comparison, driven over a pipe in JSON lines.

``python -m tests.bench.worker`` reads one request per line on stdin, ``{"op": name, "args":
{...}}``, runs ``drivers.OPS[name](**args)`` and answers one line on its real stdout, ``{"ok":
result}`` or ``{"error": traceback}``. Anything a library prints goes to stderr, so the answer
channel stays clean. The process ends when stdin closes. Each side of a comparison has its own
worker, so the sides' state stays warm and apart, and the machine's noise hits both alike.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback


def main() -> int:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # library prints must not corrupt the answer channel
    logging.basicConfig(level=logging.ERROR)
    from tests.bench import bench_sweep, drivers, leader_only, scale

    ops = {**drivers.OPS, **scale.OPS, **leader_only.OPS, **bench_sweep.OPS}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            result = ops[request["op"]](**request.get("args", {}))
            answer = {"ok": result}
        except Exception:
            answer = {"error": traceback.format_exc()}
        answers.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
