package org.k2bench.parisstar;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.MessageLossContractTest;

/** PaRiS* (K2's servers) under a drop partition. */
class ParisStarMessageLossTest extends MessageLossContractTest {
  @Override
  protected StoreSystem system() {
    return new ParisStarSystem();
  }
}
