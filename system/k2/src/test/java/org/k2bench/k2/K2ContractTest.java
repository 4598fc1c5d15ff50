package org.k2bench.k2;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.SystemContractTest;

/** K2 under the guarantees every system gives. */
class K2ContractTest extends SystemContractTest {
  @Override
  protected StoreSystem system() {
    return new K2System();
  }
}
