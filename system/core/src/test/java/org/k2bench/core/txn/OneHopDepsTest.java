package org.k2bench.core.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.k2bench.core.data.Dep;

class OneHopDepsTest {
  static List<Dep> list(OneHopDeps deps) {
    List<Dep> out = new ArrayList<>();
    deps.asDeps().forEach(out::add);
    return out;
  }

  @Test
  void theInitialVersionIsNeverADependency() {
    OneHopDeps deps = new OneHopDeps();
    deps.read("never-written", 0);
    assertEquals(0, deps.size(), "version 0 is committed everywhere: nothing to wait for");
    assertTrue(list(deps).isEmpty());

    deps.wrote("c", 7);
    deps.read("never-written", 0);
    deps.read("k", 5);
    assertFalse(deps.contains("never-written", 0));
    assertEquals(List.of(Dep.newBuilder().setKey("c").setVersion(7).build(),
        Dep.newBuilder().setKey("k").setVersion(5).build()), list(deps));
  }

  @Test
  void aWriteReplacesEverythingAndTwoVersionsOfAKeyAreTwoDependencies() {
    OneHopDeps deps = new OneHopDeps();
    deps.read("k", 5);
    deps.read("k", 9);
    deps.read("k", 5);
    assertEquals(2, deps.size(), "a set of pairs: k@5 and k@9, each once");
    deps.wrote("c", 12);
    assertEquals(1, deps.size());
    assertTrue(deps.contains("c", 12));
  }
}
