package org.k2bench.paris;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.TransactionContractTest;

/** BPR under the guarantees of every system with write-only transactions. NoCC, the PaRiS paper's system without causal consistency, has none of them. */
class BprContractTest extends TransactionContractTest {
  @Override
  protected StoreSystem system() {
    return new BprSystem();
  }
}
