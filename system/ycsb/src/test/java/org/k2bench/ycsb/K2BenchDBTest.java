package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.testing.SpecFixtures;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.testing.TestOptions;

/** A client session is configured from the trial's spec, as the servers are. */
class K2BenchDBTest {
  @TempDir
  Path dir;

  Properties props(Map<String, ?> fields) throws Exception {
    Properties p = new Properties();
    p.setProperty("k2bench.spec", SpecFixtures.write(dir, fields).toString());
    return p;
  }

  /** The client library once got TestOptions.defaults(): 1,000,000 keys whatever the run had. */
  @Test
  void theClientLibraryGetsTheRunsOptions() throws Exception {
    K2BenchDB.Config c = K2BenchDB.config(props(Map.of("workload.keys", 30_000, "clients.rpc_timeout_ms", 1_234,
        "server.cache_fraction", 0.25)));
    assertEquals("k2", c.system().name());
    ServerOptions o = c.options();
    assertEquals(30_000, o.numKeys());
    assertEquals(1_234, o.rpcTimeoutMs());
    assertEquals(0.25, o.cacheFraction());
    assertEquals(dir.resolve("topology.yaml"), c.topology(), "files.topology, beside the spec");
  }

  @Test
  void theSystemsOptionsAreCheckedAsTheServersCheckThem() throws Exception {
    Properties p = props(Map.of("system.options", Map.of("no_such_option", 1)));
    ConfigException e = assertThrows(ConfigException.class, () -> K2BenchDB.config(p));
    assertTrue(e.getMessage().startsWith(dir.resolve("spec.json") + ": system.options.no_such_option"),
        e.getMessage());
  }
}
