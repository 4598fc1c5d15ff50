package org.k2bench.rad;

import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.MessageLossContractTest;

/** RAD refuses drop mode (a lost client sub-request leaves keys prepared for good): the scenario is skipped. */
class RadMessageLossTest extends MessageLossContractTest {
  @Override
  protected StoreSystem system() {
    return new RadSystem();
  }
}
