package org.k2bench.core.testing;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The harness's checked-in spec.json (tests/fixtures/spec, kept equal to what the harness
 * writes by tests/test_spec.py): the contract RunSpec is tested against.
 */
public final class SpecFixtures {
  private SpecFixtures() {}

  /**
   * tests/fixtures/spec/default-k2.json, found upwards from the working directory: surefire
   * runs in the module's directory and does not always set maven.multiModuleProjectDirectory.
   */
  public static Path defaultK2() {
    for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
      Path f = d.resolve("tests/fixtures/spec/default-k2.json");
      if (Files.isRegularFile(f)) {
        return f;
      }
    }
    throw new IllegalStateException("no tests/fixtures/spec/default-k2.json above " + Path.of("").toAbsolutePath());
  }

  /** The fixture as a tree to change and {@link #write}. */
  public static ObjectNode defaultK2Tree() throws IOException {
    return (ObjectNode) new ObjectMapper().readTree(defaultK2().toFile());
  }

  /** {@code spec} as dir/spec.json. */
  public static Path write(Path dir, ObjectNode spec) throws IOException {
    Path f = dir.resolve("spec.json");
    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(f.toFile(), spec);
    return f;
  }

  /**
   * The fixture with {@code fields} ("workload.keys" -> 10000, dotted paths into it)
   * replaced, as dir/spec.json: a trial's spec with only what a test is about changed.
   */
  public static Path write(Path dir, Map<String, ?> fields) throws IOException {
    ObjectNode spec = defaultK2Tree();
    ObjectMapper json = new ObjectMapper();
    fields.forEach((path, value) -> {
      int dot = path.lastIndexOf('.');
      ObjectNode parent = dot < 0 ? spec : (ObjectNode) spec.at("/" + path.substring(0, dot).replace('.', '/'));
      parent.set(path.substring(dot + 1), json.valueToTree(value));
    });
    return write(dir, spec);
  }
}
