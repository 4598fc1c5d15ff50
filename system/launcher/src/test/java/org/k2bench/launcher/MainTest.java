package org.k2bench.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.Systems;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.SpecFixtures;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.testing.TestOptions;

class MainTest {
  @TempDir
  Path dir;

  record Result(int code, String out, String err) {}

  static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Main.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Result(code, out.toString(), err.toString());
  }

  Path topologyFile(String yaml) throws Exception {
    Path p = dir.resolve("topology.yaml");
    Files.writeString(p, yaml);
    return p;
  }

  static final String THREE_DCS = """
      datacenters: [A, B, C]
      rtt_ms: {A: {B: 10, C: 20}, B: {C: 30}}
      servers_per_dc: 1
      replication_factor: 3
      base_port: 7000
      """;

  static void assertOneLine(Result r) {
    assertEquals(Main.BAD_INPUT, r.code(), r.err());
    assertEquals(1, r.err().strip().lines().count(), r.err());
  }

  /** The harness's spec.json with {@code change}, beside {@code topologyYaml} (its files.topology). */
  Path spec(String topologyYaml, Consumer<ObjectNode> change) throws Exception {
    topologyFile(topologyYaml);
    ObjectNode t = SpecFixtures.defaultK2Tree();
    change.accept(t);
    return SpecFixtures.write(dir, t);
  }

  static ObjectNode at(ObjectNode t, String section) {
    return (ObjectNode) t.get(section);
  }

  @Test
  void unknownSystemListsTheValidOnes() throws Exception {
    Result r = run("serve", "--spec", spec(THREE_DCS, t -> at(t, "system").put("name", "k3")).toString(), "--all");
    assertOneLine(r);
    // every system the ServiceLoader finds, whichever modules are bundled
    assertTrue(Systems.available().containsKey("k2"), Systems.available().keySet().toString());
    assertTrue(r.err().contains("system.name: unknown system 'k3'; available: "
        + String.join(", ", Systems.available().keySet())), r.err());
  }

  @Test
  void badTopologyStopsWithOneLineNamingTheField() throws Exception {
    Result r = run("serve", "--spec", spec(THREE_DCS.replace("C: 20", "D: 20"), t -> { }).toString(), "--all");
    assertOneLine(r);
    assertTrue(r.err().contains(dir.resolve("topology.yaml") + ": rtt_ms.A.D: unknown datacenter 'D'"), r.err());
  }

  @Test
  void badFlagsAreNamed() throws Exception {
    String s = spec(THREE_DCS, t -> { }).toString();
    Result r = run("serve", "--spec", s, "--server", "A-0");
    assertOneLine(r);
    assertTrue(r.err().contains("--server"), r.err());
    r = run("serve", "--spec", s);
    assertOneLine(r);
    r = run("serve", "--spec", s, "--dc", "A", "--cache-fraction", "0.1");
    assertOneLine(r);
    assertTrue(r.err().contains("Unknown option") && r.err().contains("'--cache-fraction'"),
        "the spec carries it: " + r.err());
  }

  /** What the spec carries is the harness's to check; the launcher refuses only a spec of another shape. */
  @Test
  void aSpecWithAnUnknownFieldIsRefusedWithOneLineNamingIt() throws Exception {
    Path s = spec(THREE_DCS, t -> at(t, "server").put("cache_fractoin", 0.1));
    Result r = run("serve", "--spec", s.toString(), "--dc", "A");
    assertOneLine(r);
    assertTrue(r.err().startsWith("k2bench-server: " + s + ": server.cache_fractoin: unknown field; regenerate it "
        + "with the harness"), r.err());
    r = run("serve", "--spec", dir.resolve("nothing.json").toString(), "--all");
    assertOneLine(r);
    assertTrue(r.err().contains("nothing.json: no such file"), r.err());
  }

  @Test
  void aSystemsOwnOptionIsCheckedBeforeAnyServerStarts() throws Exception {
    Result r = run("serve", "--spec", spec(THREE_DCS, t -> {
      at(t, "system").put("name", "paris-star");
      at(t, "system").putObject("options").put("private_cache_ttl", 5);
    }).toString(), "--all");
    assertOneLine(r);
    assertTrue(r.err().contains("system.options.private_cache_ttl: paris-star has no option 'private_cache_ttl'; "
        + "its options: private_cache_ttl_ms"), r.err());
    r = run("serve", "--spec", spec(THREE_DCS, t -> {
      at(t, "system").put("name", "paris-star");
      at(t, "system").putObject("options").put("private_cache_ttl_ms", 0);
    }).toString(), "--all");
    assertOneLine(r);
    assertTrue(r.err().contains("system.options.private_cache_ttl_ms: must be in [1, 3600000], got '0'"), r.err());
    r = run("serve", "--spec", spec(THREE_DCS, t -> at(t, "system").putObject("options")
        .put("private_cache_ttl_ms", 5)).toString(), "--all");
    assertOneLine(r);
    assertTrue(r.err().contains("k2 has no option 'private_cache_ttl_ms'; it declares none"), r.err());
  }

  @Test
  void systemsListsEveryBundledSystem() {
    Result r = run("systems");
    assertEquals(0, r.code());
    for (String name : new String[] {"k2", "paris-star", "rad"}) {
      assertTrue(r.out().lines().anyMatch(l -> l.startsWith(name + " ")), r.out());
      assertTrue(Systems.available().containsKey(name));
    }
    Result json = run("systems", "--json");
    assertEquals(0, json.code());
    assertTrue(json.out().contains("{\"name\":\"k2\",") && json.out().contains("\"max_wan_rounds\":1,"), json.out());
    assertTrue(json.out().contains("RAD") && json.out().contains("\"max_wan_rounds\":null,"), "RAD claims no bound");
    assertTrue(json.out().contains("\"not_own\":{\"wot\":\"K2's local commit"), "PaRiS*'s writes are K2's: " + json.out());
    assertTrue(json.out().contains("\"options\":[{\"name\":\"private_cache_ttl_ms\",\"type\":\"integer\","
        + "\"default\":\"5000\",\"min\":\"1\",\"max\":\"3600000\""), "PaRiS*'s own option: " + json.out());
    assertTrue(json.out().contains("\"placements\":[\"groups\"]"), json.out());
  }

  @Test
  void pingMeasuresTheMatrixOfRunningServers() throws Exception {
    Topology t = FreePorts.assign(TopologyLoader.parse(THREE_DCS));
    StringBuilder servers = new StringBuilder("servers:\n");
    for (int dc = 0; dc < 3; dc++) {
      servers.append("  ").append(t.dcName(dc)).append(": [\"").append(t.address(dc)).append("\"]\n");
    }
    Path file = topologyFile(THREE_DCS.replace("base_port: 7000\n", servers.toString()));
    try (LocalCluster c = LocalCluster.start(Systems.byName("system", "k2"), TopologyLoader.load(file),
        TestOptions.defaults())) {
      Path json = dir.resolve("rtt.json");
      Result r = run("ping", "--topology", file.toString(), "--samples", "5", "--warmup-s", "1",
          "--json", json.toString());
      assertEquals(0, r.code(), r.err());
      assertTrue(r.out().contains("B-C"), r.out());
      String text = Files.readString(json);
      assertTrue(text.contains("\"configured\" : 30.0"), text);
    }
  }

  /**
   * The bench counts each phase's deliveries and nothing else: two per ping (ping and
   * pong), none from the warm-up before it, none of the idle phase in the load phase's
   * background (which has messages of its own); and it measures the machine's wake-ups.
   */
  @Test
  void benchEmulationRecordsEachPhasesDeliveriesAndTheMachinesWakeUps() throws Exception {
    Path out = dir.resolve("bench");
    Result r = run("bench-emulation", "--out", out.toString(), "--topology", topologyFile(THREE_DCS).toString(),
        "--samples", "20", "--probes-per-pair", "2", "--gap-ms", "1", "--load-rate", "200", "--warmup-s", "1",
        "--wake-sleeps", "50");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("this machine's wake-ups"), r.out());
    var json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.resolve("bench-emulation.json").toFile());
    int pings = 20 * 3;
    assertEquals(2 * pings, json.at("/delivery_lateness_ms/idle/count").asLong(), json.toString());
    long load = json.at("/delivery_lateness_ms/load/count").asLong();
    long background = Math.round(json.at("/background_msgs_per_s_load").asDouble() * json.at("/load_seconds").asDouble());
    assertTrue(load > 2 * pings && load <= 2 * pings + background + 2,
        "the load phase's pings and at most its background messages: " + load + ", background sent " + background);
    long wakeups = json.at("/machine_wakeup_lateness_ms/count").asLong();
    assertTrue(wakeups > 0.9 * EmulationBench.WAKE_THREADS * 50 && wakeups <= EmulationBench.WAKE_THREADS * 50,
        "wake-up samples: " + wakeups);
    assertTrue(json.at("/steal_ms/idle").isNumber(), "Linux has /proc/stat: " + json.at("/steal_ms"));
    assertEquals(pings, json.at("/stalls/idle/pings").asLong(), "every idle ping is set beside the stalls");
    assertEquals(pings, json.at("/stalls/load/pings").asLong(), json.at("/stalls").toString());
    assertTrue(json.at("/stalls/idle/sleeper_lateness_ms/count").asLong() > 0, json.at("/stalls").toString());
    assertTrue(r.out().contains("worst pair p99 with the stalls' time taken out"), r.out());
    assertTrue(json.at("/stalls/idle/worst_pair_p99_net_of_stalls_ms").isNumber(), json.at("/stalls").toString());
  }
}
