package org.k2bench.karma;

import org.k2bench.core.api.StoreSystem;

/** Karma under a drop partition. */
class KarmaMessageLossTest extends RingMessageLossTest {
  @Override
  protected StoreSystem system() {
    return new KarmaSystem();
  }
}
