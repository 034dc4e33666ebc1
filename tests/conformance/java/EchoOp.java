import com.fasterxml.jackson.databind.JsonNode;

/** Answers its request unchanged, or fails on request: the harness' own smoke test. */
public final class EchoOp implements Op {
    @Override
    public JsonNode run(final JsonNode request) {
        if (request.path("fail").asBoolean(false)) {
            throw new IllegalStateException("failure requested");
        }
        return request;
    }
}
