package org.k2bench.rad;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.TransactionContractTest;

/** RAD under the guarantees every system gives. */
class RadContractTest extends TransactionContractTest {
  @Override
  protected StoreSystem system() {
    return new RadSystem();
  }
}
