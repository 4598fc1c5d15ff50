package org.k2bench.core.testing;

import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.SystemOptions;

/**
 * The options of clusters that tests start in process: the paper's defaults, the same values
 * as the harness's schema (k2bench/spec/schema.py), which is where a run's come from.
 */
public final class TestOptions {
  private TestOptions() {}

  public static ServerOptions defaults() {
    return new ServerOptions(1_000_000, 0.05, 5_000, 15_000, 5_000, 10_000, 2_000, 1, SystemOptions.NONE);
  }
}
