package org.k2bench.karma;

import org.k2bench.core.api.StoreSystem;

/** COPS-PR under a drop partition. */
class CopsPrMessageLossTest extends RingMessageLossTest {
  @Override
  protected StoreSystem system() {
    return new CopsPrSystem();
  }
}
