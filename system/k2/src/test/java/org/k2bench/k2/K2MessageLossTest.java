package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.MessageLossContractTest;
import org.k2bench.core.testing.Mutants;

/** K2 under a drop partition; without retransmission (the mutant) versions stay missing. */
class K2MessageLossTest extends MessageLossContractTest {
  @Override
  protected StoreSystem system() {
    return new K2System();
  }

  /** The scenario catches what the retransmitter repairs: with each message sent once, TYO misses versions for good. */
  @Test
  void withoutRetransmissionVersionsStayMissing() {
    String seen = Mutants.runWith(Mutants.NO_RETRANSMISSION, () -> afterADropPartition("mut", 10_000));
    assertTrue(seen != null && seen.contains("misses"), "the mutant loses versions: " + seen);
  }
}
