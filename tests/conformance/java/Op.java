import com.fasterxml.jackson.databind.JsonNode;

/**
 * One operation of the conformance harness. The harness maps op name "foo_bar" to class
 * {@code FooBarOp} (default package) and keeps one instance per class for the JVM's lifetime,
 * so an op may cache expensive setup between requests.
 */
public interface Op {
    JsonNode run(JsonNode request) throws Exception;
}
