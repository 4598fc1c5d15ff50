package org.k2bench.core.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.api.RunSpec;
import org.k2bench.core.topology.ConfigException;

/** A run's mutant comes from its spec (testing.mutant), and only from there. */
class MutantsTest {
  @TempDir
  Path dir;

  @AfterEach
  void clear() {
    Mutants.clearSelection();
  }

  private RunSpec spec(String mutant) throws Exception {
    var t = SpecFixtures.defaultK2Tree();
    ((com.fasterxml.jackson.databind.node.ObjectNode) t.get("testing")).put("mutant", mutant);
    return RunSpec.read(SpecFixtures.write(dir, t));
  }

  @Test
  void theSpecsMutantIsActiveAndNoOther() throws Exception {
    Mutants.select(RunSpec.read(SpecFixtures.defaultK2())); // testing.mutant: null
    assertFalse(Mutants.active(Mutants.READ_PENDING));
    Mutants.select(spec("read-pending"));
    assertTrue(Mutants.active(Mutants.READ_PENDING));
    assertFalse(Mutants.active(Mutants.SKIP_DEPENDENCY_CHECKS));
    Mutants.select(spec("read-pending")); // a server JVM's in-process clients read the same spec
    assertTrue(Mutants.active(Mutants.READ_PENDING));
  }

  @Test
  void aSecondDifferentMutantOrAnUnknownOneIsRefusedNamingTheField() throws Exception {
    Mutants.select(spec("read-pending"));
    ConfigException e = assertThrows(ConfigException.class, () -> Mutants.select(spec("deps-max-per-key")));
    assertEquals(dir.resolve("spec.json") + ": testing.mutant: this process already runs 'read-pending', not "
        + "'deps-max-per-key'", e.getMessage());
    assertTrue(Mutants.active(Mutants.READ_PENDING), "the first one stays");

    Mutants.clearSelection();
    e = assertThrows(ConfigException.class, () -> Mutants.select(spec("no-such-mutant")));
    assertTrue(e.getMessage().startsWith(dir.resolve("spec.json") + ": testing.mutant: unknown mutant "
        + "'no-such-mutant'; known: ["), e.getMessage());
    assertFalse(Mutants.all().isEmpty());
    assertFalse(Mutants.active("no-such-mutant"));
  }

  @Test
  void aTestsOverrideWinsOverTheRunsSelection() throws Exception {
    Mutants.select(spec("read-pending"));
    assertTrue(Mutants.runWith(Mutants.DEPS_MAX_PER_KEY, () -> Mutants.active(Mutants.DEPS_MAX_PER_KEY)
        && !Mutants.active(Mutants.READ_PENDING)));
  }
}
