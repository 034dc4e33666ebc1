"""The only aiokafka code: the per-process assignor, internal topics and end offsets, rejoins."""
