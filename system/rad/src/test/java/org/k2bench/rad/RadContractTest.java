package org.k2bench.rad;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.SystemContractTest;

/** RAD under the guarantees every system gives. */
class RadContractTest extends SystemContractTest {
  @Override
  protected StoreSystem system() {
    return new RadSystem();
  }
}
