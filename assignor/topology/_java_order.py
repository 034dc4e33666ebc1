"""The one place the topology code reaches the emulation of Java's collections.

Kafka sizes repartition topics and merges copartition groups while walking ``HashSet`` and
``HashMap`` instances, and the results depend on that walk order. Every module of this package
imports the pieces it needs from here, so when the emulation moves only these lines change.
"""

from __future__ import annotations

from assignor._java.hash_codes import int32, string_hash
from assignor._java.hash_table import JavaHashSet

__all__ = ["JavaHashSet", "int32", "string_hash"]
