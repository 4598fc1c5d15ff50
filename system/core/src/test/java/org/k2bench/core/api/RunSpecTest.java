package org.k2bench.core.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.testing.SpecFixtures;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.transport.Transport;

/** The harness's spec.json as the Java side reads it: structure checked, values as written. */
class RunSpecTest {
  @TempDir
  Path dir;

  /** Stands in for the bundled k2 (core does not have it): no options of its own. */
  static final StoreSystem K2 = new StoreSystem() {
    @Override
    public String name() {
      return "k2";
    }

    @Override
    public String description() {
      return "k2 stand-in";
    }

    @Override
    public ServerNode startServer(Transport transport, int serverId, ServerOptions options) {
      throw new UnsupportedOperationException();
    }

    @Override
    public KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options) {
      throw new UnsupportedOperationException();
    }
  };

  @Test
  void readsTheSpecTheHarnessWrites() {
    Path file = SpecFixtures.defaultK2();
    RunSpec s = RunSpec.read(file);
    assertEquals(1, s.specVersion());
    assertEquals("default", s.experiment().name());
    assertEquals(Map.of(), s.experiment().pointValues());
    assertEquals("k2", s.system().name());
    assertEquals(30000, s.workload().keys());
    assertEquals(1.2, s.workload().zipf());
    assertEquals(Map.of(5, 1.0), s.workload().keysPerOp().probabilities());
    assertEquals(Map.of(128, 1.0), s.workload().valueBytes().probabilities());
    assertEquals(0.05, s.server().cacheFraction());
    assertEquals(2000, s.server().failoverTimeoutMs());
    assertNull(s.server().jvmArgs());
    assertEquals(10000, s.clients().rpcTimeoutMs());
    assertEquals(20.0, s.clients().targetOpsPerSPerDc());
    assertEquals(List.of("-XX:TieredStopAtLevel=1"), s.clients().jvmArgs());
    assertEquals(2, s.topology().serversPerDc());
    assertNull(s.topology().intraDcDelayMs());
    assertEquals(100.0, s.duration().measureS());
    assertEquals(List.of(), s.faults());
    assertNull(s.testing().mutant());
    assertEquals(file.resolveSibling("topology.yaml"), s.resolve(s.files().topology()));
  }

  @Test
  void serverOptionsAreTheSpecsSharedParametersAndTheSystemsOwn() throws Exception {
    assertEquals(new ServerOptions(30000, 0.05, 5000, 15000, 5000, 10000, 2000, 1, SystemOptions.NONE),
        RunSpec.read(SpecFixtures.defaultK2()).serverOptions(K2));

    RunSpec demo = RunSpec.read(spec(t -> {
      at(t, "system").put("name", "demo");
      at(t, "system").putObject("options").put("interval_ms", 7).put("blocking", true).put("share", 0.25)
          .put("wait", "queue");
    }));
    ServerOptions o = demo.serverOptions(SystemOptionsTest.SYSTEM);
    assertEquals(SystemOptions.parse(SystemOptionsTest.SYSTEM,
        Map.of("interval_ms", "7", "blocking", "true", "share", "0.25", "wait", "queue"), "x"), o.system());
    assertEquals(30000, o.numKeys());

    // the system's own checks, named where the value is in the spec
    RunSpec bad = RunSpec.read(spec(t -> {
      at(t, "system").put("name", "demo");
      at(t, "system").putObject("options").put("interval_ms", 0);
    }));
    ConfigException e = assertThrows(ConfigException.class, () -> bad.serverOptions(SystemOptionsTest.SYSTEM));
    assertEquals(dir.resolve("spec.json") + ": system.options.interval_ms: must be in [1, 1000], got '0'",
        e.getMessage());

    e = assertThrows(ConfigException.class, () -> demo.serverOptions(K2));
    assertTrue(e.getMessage().startsWith(dir.resolve("spec.json") + ": system.name: is 'demo', but the servers "
        + "asked for are k2's"), e.getMessage());
  }

  @Test
  void aFaultHasTheFieldsOfItsKind() throws Exception {
    RunSpec s = RunSpec.read(spec(t -> {
      ArrayNode faults = t.putArray("faults");
      faults.addObject().put("kind", "kill").put("at_s", 30.0).put("dc", "TYO").put("clients", "redirect");
      ObjectNode delay = faults.addObject().put("kind", "delay").put("at_s", 5.0).put("for_s", 10.0)
          .put("extra_ms", 50.0);
      delay.putArray("dcs").add("VA").add("CA");
    }));
    assertEquals(new RunSpec.Fault("kill", 30.0, null, "TYO", null, null, null, null, "redirect"), s.faults().get(0));
    assertEquals(new RunSpec.Fault("delay", 5.0, 10.0, null, null, List.of("VA", "CA"), null, 50.0, null),
        s.faults().get(1));
  }

  @Test
  void aSpecThatIsNotTheHarnesssIsRefusedNamingTheField() throws Exception {
    refused(t -> at(t, "workload").put("zipff", 1.2), "workload.zipff: unknown field");
    refused(t -> at(t, "server").remove("gc_window_ms"), "server.gc_window_ms: missing");
    refused(t -> at(t, "workload").put("zipf", "1.2"), "workload.zipf: must be a number, got \"1.2\"");
    refused(t -> at(t, "workload").put("keys", 30000.5), "workload.keys: must be an integer, got 30000.5");
    refused(t -> at(t, "system").putNull("name"), "system.name: must not be null");
    refused(t -> at(t, "workload").put("columns", "five"),
        "workload.columns: must be an integer or an object {\"value\": probability}, got \"five\"");
    refused(t -> t.put("spec_version", 2), "spec_version: is 2, this launcher reads 1");
    refused(t -> t.putArray("faults").addObject().put("kind", "kill").put("at_s", 1.0).put("dcc", "VA"),
        "faults[0].dcc: unknown field");
    refused(t -> t.remove("files"), "files: missing");
  }

  private void refused(Consumer<ObjectNode> change, String what) throws Exception {
    Path file = spec(change);
    ConfigException e = assertThrows(ConfigException.class, () -> RunSpec.read(file));
    assertEquals(1, e.getMessage().lines().count(), e.getMessage());
    assertTrue(e.getMessage().startsWith(file + ": " + what + "; "), e.getMessage());
    assertTrue(e.getMessage().endsWith("regenerate it with the harness of this launcher's version "
        + "(k2bench run writes one per trial); an older or newer harness wrote it"), e.getMessage());
  }

  private static ObjectNode at(ObjectNode t, String section) {
    return (ObjectNode) t.get(section);
  }

  /** The harness's spec with {@code change}, as dir/spec.json. */
  private Path spec(Consumer<ObjectNode> change) throws Exception {
    ObjectNode t = SpecFixtures.defaultK2Tree();
    change.accept(t);
    return SpecFixtures.write(dir, t);
  }
}
