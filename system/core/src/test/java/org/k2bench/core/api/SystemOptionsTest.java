package org.k2bench.core.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.testing.TestOptions;

/** A system's own options: declared, checked with one-line errors, defaults where not given. */
class SystemOptionsTest {
  static final SystemOption INTERVAL = SystemOption.integer("interval_ms", 5, 1, 1000, "gossip interval, ms");
  static final SystemOption SHARE = SystemOption.number("share", 0.5, 0, 1, "a fraction");
  static final SystemOption BLOCKING = SystemOption.flag("blocking", false, "reads block");
  static final SystemOption WAIT = SystemOption.choice("wait", "thread", List.of("thread", "queue"), "how reads wait");

  static final StoreSystem SYSTEM = new StoreSystem() {
    @Override
    public String name() {
      return "demo";
    }

    @Override
    public String description() {
      return "a system with options";
    }

    @Override
    public List<SystemOption> options() {
      return List.of(INTERVAL, SHARE, BLOCKING, WAIT);
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

  static ConfigException bad(Map<String, String> given) {
    ConfigException e = assertThrows(ConfigException.class, () -> SystemOptions.parse(SYSTEM, given, "opt."));
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    return e;
  }

  @Test
  void givenValuesAreReadAndTheRestAreDefaults() {
    SystemOptions o = SystemOptions.parse(SYSTEM, Map.of("interval_ms", "20", "blocking", "true"), "opt.");
    assertEquals(20, o.integer(INTERVAL));
    assertEquals(0.5, o.number(SHARE));
    assertTrue(o.flag(BLOCKING));
    assertEquals(Map.of("interval_ms", "20", "share", "0.5", "blocking", "true", "wait", "thread"),
        o.inForce(SYSTEM.options()));
    assertEquals(5, SystemOptions.NONE.integer(INTERVAL));
    assertEquals(SystemOptions.NONE, SystemOptions.parse(SYSTEM, Map.of(), "opt."));
    ServerOptions withThem = TestOptions.defaults().withSystemOptions(o).withRpcTimeoutMs(5);
    assertEquals(20, withThem.system().integer(INTERVAL), "kept through every other change");
  }

  @Test
  void eachBadValueIsNamedWithWhatIsAllowed() {
    ConfigException e = bad(Map.of("intervalms", "5"));
    assertEquals("opt.intervalms", e.field());
    assertTrue(e.getMessage().contains("demo has no option 'intervalms'; its options: blocking, interval_ms, share, wait"),
        e.getMessage());
    e = bad(Map.of("interval_ms", "0"));
    assertTrue(e.getMessage().contains("must be in [1, 1000], got '0'"), e.getMessage());
    e = bad(Map.of("interval_ms", "2.5"));
    assertTrue(e.getMessage().contains("must be a whole number"), e.getMessage());
    e = bad(Map.of("share", "half"));
    assertTrue(e.getMessage().contains("must be a number in [0, 1], got 'half'"), e.getMessage());
    e = bad(Map.of("blocking", "yes"));
    assertTrue(e.getMessage().contains("must be true or false, got 'yes'"), e.getMessage());
    e = bad(Map.of("wait", "spin"));
    assertTrue(e.getMessage().contains("must be one of thread, queue, got 'spin'"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> SystemOption.choice("w", "spin", List.of("a", "b"), "x"));
    assertThrows(IllegalArgumentException.class, () -> SystemOption.integer("Bad-Name", 1, 0, 2, "x"));
    assertThrows(IllegalArgumentException.class, () -> SystemOption.integer("x", 5, 0, 2, "default out of range"));
  }

  @Test
  void aChoiceIsGivenByNameAndDefaultsToItsDefault() {
    assertEquals("thread", SystemOptions.parse(SYSTEM, Map.of(), "opt.").choice(WAIT));
    SystemOptions o = SystemOptions.parse(SYSTEM, Map.of("wait", "queue"), "opt.");
    assertEquals("queue", o.choice(WAIT));
    assertEquals("queue", o.inForce(List.of(WAIT)).get("wait"));
  }
}
