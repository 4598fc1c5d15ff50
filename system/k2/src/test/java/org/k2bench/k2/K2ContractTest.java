package org.k2bench.k2;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.TransactionContractTest;

/** K2 under the guarantees every system gives. */
class K2ContractTest extends TransactionContractTest {
  @Override
  protected StoreSystem system() {
    return new K2System();
  }
}
