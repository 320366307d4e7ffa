package dev.blindexec.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;

/**
 * Reads each example of a file ([{"class": "ExecuteResult", "example": {...}}, ...])
 * into its generated class and writes it again, one line each, for
 * api/client/java_test.go to compare with the example. A field the class
 * does not know fails the read (Jackson's default).
 */
public class RoundTrip {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        for (JsonNode pair : mapper.readTree(new File(args[0]))) {
            Class<?> cls = Class.forName("dev.blindexec.api." + pair.get("class").asText());
            Object value = mapper.treeToValue(pair.get("example"), cls);
            System.out.println(mapper.writeValueAsString(value));
        }
    }
}
