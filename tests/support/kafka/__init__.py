"""A real Apache Kafka broker for the tests: jars from Maven Central, KRaft, 127.0.0.1 only."""
