"""Java's collections as Kafka's results depend on them (private): one emulation, exact to JDK 17.

* :mod:`~assignor._java.hash_codes` - ``hashCode`` of ``String``, ``UUID``/``ProcessId``,
  ``TaskId``, ``Objects.hash``; ``int`` wrapping, ``HashMap.hash`` spreading, Java's limits.
* :mod:`~assignor._java.hash_table` - ``HashSet``/``HashMap`` iteration order: resizes,
  treeify-driven resizes, removal (also through an iterator).
* :mod:`~assignor._java.tree_bin` - the red-black tree bins a crowded bucket turns into.
* :mod:`~assignor._java.priority_queue` - ``PriorityQueue``: the same heap array, step for step.

``tests/conformance/test_java_collections.py`` drives them against the JDK's own classes.
"""
