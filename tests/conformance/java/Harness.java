import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * JSON-lines driver for the Python conformance tests: one request per stdin line, one answer per
 * stdout line, in order. A request names its op ({"op": "threads", ...}); the op class is found by
 * name, so new ops need no change here. Answers are {"result": ...} or {"error": ..., "trace": ...};
 * a failing request never ends the JVM. Anything else writing to System.out (library code) is sent
 * to stderr so that stdout carries only answers.
 */
public final class Harness {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Map<String, Op> OPS = new HashMap<>();

    private Harness() {
    }

    public static void main(final String[] args) throws Exception {
        final PrintStream protocolOut = System.out;
        System.setOut(System.err);
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final BufferedWriter out = new BufferedWriter(new OutputStreamWriter(protocolOut, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            out.write(MAPPER.writeValueAsString(answer(line)));
            out.write('\n');
            // Flush only when no further request is already waiting: batches stay fast, single
            // calls are answered at once.
            if (!in.ready()) {
                out.flush();
            }
        }
        out.flush();
    }

    static ObjectNode answer(final String line) {
        final ObjectNode reply = MAPPER.createObjectNode();
        try {
            final JsonNode request = MAPPER.readTree(line);
            final JsonNode name = request.get("op");
            if (name == null || !name.isTextual()) {
                throw new IllegalArgumentException("request has no textual \"op\" field");
            }
            reply.set("result", op(name.asText()).run(request));
        } catch (final Throwable error) {
            final Throwable cause = error instanceof InvocationTargetException && error.getCause() != null
                ? error.getCause() : error;
            reply.put("error", cause.getClass().getName() + ": " + cause.getMessage());
            final StringWriter trace = new StringWriter();
            cause.printStackTrace(new PrintWriter(trace));
            reply.put("trace", trace.toString());
        }
        return reply;
    }

    static Op op(final String name) throws Exception {
        Op op = OPS.get(name);
        if (op == null) {
            final String className = className(name);
            final Class<?> type;
            try {
                type = Class.forName(className);
            } catch (final ClassNotFoundException missing) {
                throw new IllegalArgumentException("unknown op \"" + name + "\": no class " + className);
            }
            op = (Op) type.getDeclaredConstructor().newInstance();
            OPS.put(name, op);
        }
        return op;
    }

    /** "legacy_sticky" -> "LegacyStickyOp", "ha" -> "HaOp". */
    static String className(final String name) {
        final StringBuilder result = new StringBuilder();
        boolean upper = true;
        for (final char ch : name.toCharArray()) {
            if (ch == '_' || ch == '-') {
                upper = true;
            } else if (upper) {
                result.append(Character.toUpperCase(ch));
                upper = false;
            } else {
                result.append(ch);
            }
        }
        return result.append("Op").toString();
    }
}
