package org.k2bench.karma;

import org.k2bench.core.api.StoreSystem;

/** Karma on the three rings under the guarantees every system gives. */
class KarmaContractTest extends RingContractTest {
  @Override
  protected StoreSystem system() {
    return new KarmaSystem();
  }
}
