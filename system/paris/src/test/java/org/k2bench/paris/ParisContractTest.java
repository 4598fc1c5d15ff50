package org.k2bench.paris;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.TransactionContractTest;

/** PaRiS under the guarantees of every system with write-only transactions (its writes are read-write transactions). */
class ParisContractTest extends TransactionContractTest {
  @Override
  protected StoreSystem system() {
    return new ParisSystem();
  }
}
