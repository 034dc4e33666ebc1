"""Steps 4-5 of a rebalance: which client runs which task, then which thread; pure functions.

One algorithm per module behind :class:`assignor.placement.task_assignor.TaskAssignor`, as in
Kafka's ``processor/internals/assignment`` package. The emulation of Java's collection orders
they need (shared with repartition sizing) is the private package ``assignor._java``.
"""
