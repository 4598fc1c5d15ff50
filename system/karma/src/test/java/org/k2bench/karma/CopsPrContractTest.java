package org.k2bench.karma;

import org.k2bench.core.api.StoreSystem;

/** COPS-PR on the three rings under the guarantees every system gives. */
class CopsPrContractTest extends RingContractTest {
  @Override
  protected StoreSystem system() {
    return new CopsPrSystem();
  }
}
