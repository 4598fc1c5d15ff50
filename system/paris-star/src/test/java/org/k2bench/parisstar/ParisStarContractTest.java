package org.k2bench.parisstar;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.SystemContractTest;

/** PaRiS* under the guarantees every system gives. */
class ParisStarContractTest extends SystemContractTest {
  @Override
  protected StoreSystem system() {
    return new ParisStarSystem();
  }
}
