"""Steps 4-5 of a rebalance: which client runs which task, then which thread; pure functions.

One algorithm per module behind :class:`assignor.placement.task_assignor.TaskAssignor`, as in
Kafka's ``processor/internals/assignment`` package; ``_java`` holds the emulation of Java's
collection orders that exact agreement with Kafka needs.
"""
