"""Integration tests against a real Apache Kafka broker (and the member-process runner)."""
