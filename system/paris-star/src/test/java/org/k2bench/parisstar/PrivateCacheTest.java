package org.k2bench.parisstar;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.k2bench.core.testing.Clusters;

class PrivateCacheTest {
  @Test
  void holdsTheSessionsOwnWriteForFiveSecondsThenForgetsIt() {
    AtomicLong now = new AtomicLong(1_000);
    PrivateCache c = new PrivateCache(ParisStarSystem.PRIVATE_CACHE_TTL_MS, now::get);
    c.onWrite(Map.of("k", Clusters.row("v1")), 100);
    assertEquals("v1", Clusters.str(c.get("k", 100)));
    assertNull(c.get("k", 99), "only the exact version");
    now.addAndGet(4_999);
    assertEquals("v1", Clusters.str(c.get("k", 100)));
    now.addAndGet(1);
    assertNull(c.get("k", 100), "expired after 5 s");
    assertEquals(0, c.size());
  }

  @Test
  void keepsOnlyTheNewestOwnWritePerKey() {
    AtomicLong now = new AtomicLong(0);
    PrivateCache c = new PrivateCache(5_000, now::get);
    c.onWrite(Map.of("k", Clusters.row("v1")), 100);
    c.onWrite(Map.of("k", Clusters.row("v2"), "j", Clusters.row("w")), 200);
    assertNull(c.get("k", 100));
    assertEquals("v2", Clusters.str(c.get("k", 200)));
    assertEquals(2, c.size());
  }
}
