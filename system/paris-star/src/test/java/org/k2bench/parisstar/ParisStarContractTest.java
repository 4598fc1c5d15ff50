package org.k2bench.parisstar;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.TransactionContractTest;

/** PaRiS* under the guarantees every system gives. */
class ParisStarContractTest extends TransactionContractTest {
  @Override
  protected StoreSystem system() {
    return new ParisStarSystem();
  }
}
