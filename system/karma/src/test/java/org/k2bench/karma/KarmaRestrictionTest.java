package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;

/**
 * Dynamic ring restrictions (Karma paper §4.2) on the three rings {VA, CA, LDN}, {TYO, SG},
 * {SP}, matrix / 10.
 *
 * <p>The bad interleaving: a writer in VA puts X then Y. X lives at CA in ring 0 and the link
 * VA-CA is slowed by 60 ms, so ring 0 gets X_new late, while ring 1 (TYO) has X_new and then
 * Y_new early. A reader in CA reads Y from its nearest ring, ring 1 (TYO, 11 ms; ring 0's
 * LDN is 13.6 ms), and X from its own datacenter (ring 0). Without restrictions it reads
 * Y_new and then X_old; with them, reading the in-flight Y_new binds it to ring 1, which has
 * X_new.
 */
class KarmaRestrictionTest extends KarmaClusterTest {
  /** Runs the writer and the CA reader for {@code ms}; returns the reader's violations. */
  private List<String> race(String x, String y, KvClient reader, long ms, AtomicLong sawY, AtomicLong restricted)
      throws InterruptedException {
    Clusters.slowLink(cluster, VA, CA, 60);
    KvClient writer = cluster.client(VA);
    AtomicBoolean stop = new AtomicBoolean();
    Thread w = new Thread(() -> {
      for (long i = 1; !stop.get(); i++) {
        writer.write(x, row(Long.toString(i)));
        writer.write(y, row(Long.toString(i)));
        Clusters.sleep(20);
      }
    });
    List<String> failures = new ArrayList<>();
    w.start();
    long end = System.currentTimeMillis() + ms;
    while (System.currentTimeMillis() < end) {
      long yv = num(str(reader.readTxn(List.of(y)).rows().get(y)));
      if (((KarmaClient) reader).restrictedRing() >= 0) {
        restricted.incrementAndGet();
      }
      long xv = num(str(reader.readTxn(List.of(x)).rows().get(x)));
      if (yv > 0) {
        sawY.incrementAndGet();
      }
      if (xv < yv) {
        failures.add("read Y=" + yv + " then X=" + xv);
      }
    }
    stop.set(true);
    w.join(5_000);
    return failures;
  }

  private static long num(String s) {
    return s.isEmpty() ? 0 : Long.parseLong(s);
  }

  @Test
  void readingAnInFlightValueRestrictsTheClientAndLaterReadsStayCausal() throws Exception {
    String x = key("r-x", CA, TYO);
    String y = key("r-y", LDN, TYO);
    AtomicLong sawY = new AtomicLong();
    AtomicLong restricted = new AtomicLong();
    List<String> failures = race(x, y, client(CA, 100), 3_000, sawY, restricted);
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertTrue(sawY.get() > 20, "the reader saw Y advance: " + sawY.get());
    assertTrue(restricted.get() > 5, "reads of in-flight values restricted the reader: " + restricted.get());
  }

  /** The same race with no value ever reported in flight: the reader mixes rings and breaks causality. */
  @Test
  void withoutRestrictionsTheSameRaceBreaksCausality() throws Exception {
    String x = key("m-x", CA, TYO);
    String y = key("m-y", LDN, TYO);
    AtomicLong sawY = new AtomicLong();
    AtomicLong restricted = new AtomicLong();
    List<String> failures = Mutants.runWith(KarmaMutants.KARMA_NO_RESTRICTIONS, () -> {
      try {
        return race(x, y, client(CA, 100), 3_000, sawY, restricted);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    });
    assertEquals(0, restricted.get(), "nothing restricts the reader under the mutant");
    assertTrue(failures.size() > 5, "the reader read Y_new then X_old: " + failures.size() + " times of "
        + sawY.get());
  }

  /**
   * A hot key written concurrently: A (VA) puts x then h@v1; C (TYO) puts h@v2, concurrent and
   * with a larger version; B (CA) reads h@v1 in flight from ring 0 and puts z after it. Ring 1
   * gets A's puts half a second late, C's at once. B's put-after of z to ring 1 must wait for
   * h@v1 itself there, not be satisfied by h@v2, which says nothing of x: else a reader in SG
   * reads B's z from ring 1 and then the x ring 1 had before A's put.
   */
  @Test
  void aNewerConcurrentVersionOfADependencyDoesNotSatisfyIt() {
    assertEquals("a-x", hotKey("hot", 500, 500, List.of("a-h")), "D read B's z, which follows A's x");
  }

  /**
   * The same hot key on the client side: B reads h@v1 in flight and then C's concurrent,
   * newer h@v2 (in flight too) before putting z. z must still depend on h@v1 (and so wait for
   * A's x in ring 1), not only on the newest version of h B read.
   */
  @Test
  void everyVersionReadInFlightIsADependencyNotOnlyTheNewest() {
    assertEquals("a-x", hotKey("hot2", 1_500, 300, List.of("a-h", "c-h")), "D read B's z, which follows A's x");
  }

  /**
   * A (VA) puts x then h@v1, C (TYO) a concurrent h@v2 with a larger version; A's puts reach
   * ring 1 {@code ring1Ms} late, C's ring 0 {@code ring0Ms} late. B (CA) reads h at ring 0
   * until it has read each of {@code bReads} in turn, then puts z; D (SG) reads z until it
   * has B's, then returns what it reads of x.
   */
  private String hotKey(String prefix, long ring1Ms, long ring0Ms, List<String> bReads) {
    String x = key(prefix + "-x", VA, SG);
    String h = key(prefix + "-h", CA, TYO);
    String z = key(prefix + "-z", LDN, SG);
    KarmaClient a = (KarmaClient) cluster.client(VA);
    KarmaClient c = (KarmaClient) cluster.client(TYO);
    KarmaClient b = client(CA, 600_000);
    KarmaClient d = client(SG, 600_000);
    for (int ring1 : new int[] {TYO, SG}) {
      Clusters.slowLink(cluster, VA, ring1, ring1Ms);
    }
    for (int ring0 : new int[] {VA, CA, LDN}) {
      Clusters.slowLink(cluster, TYO, ring0, ring0Ms);
    }
    a.write(x, row("a-x"));
    long v1 = a.write(h, row("a-h")).version();
    c.clock().observeTimestamp(v1 + (1_000L << 16));
    assertTrue(c.write(h, row("c-h")).version() > v1, "C's version of h is the newer");
    for (String want : bReads) {
      awaitRead(b, h, want);
    }
    assertTrue(b.restrictions() > 0, "B read h in flight");
    b.write(z, row("b-z"));
    awaitRead(d, z, "b-z");
    return str(d.readTxn(List.of(x)).rows().get(x));
  }

  private static void awaitRead(KarmaClient client, String key, String want) {
    long deadline = System.currentTimeMillis() + 5_000;
    while (!want.equals(str(client.readTxn(List.of(key)).rows().get(key))) && System.currentTimeMillis() < deadline) {
      Clusters.sleep(2);
    }
    assertEquals(want, str(client.readTxn(List.of(key)).rows().get(key)), "datacenter " + client.dc() + " reads " + want);
  }

  /**
   * A get-transaction of a buffered own write x and a key y read from the ring: B (TYO) wrote
   * x with a larger version and then y, so reading y's new value puts B's x in the
   * transaction's causal past, and x must come back as B's, not the buffered older one. S's
   * put of x waits in its ring-0 queue behind a put to LDN, whose link is slowed.
   */
  @Test
  void aGetTransactionDoesNotReturnABufferedWriteOlderThanOneItDependsOn() {
    String blocker = key("gt-k", LDN, TYO);
    String x = key("gt-x", CA, SG); // both in S's datacenter in ring 0: the transaction reads ring 0
    String y = key("gt-y", CA, TYO);
    KarmaClient s = client(CA, 600_000);
    KarmaClient b = (KarmaClient) cluster.client(TYO);
    Clusters.slowLink(cluster, CA, LDN, 2_000);
    s.write(blocker, row("s-k"));
    long v2 = s.write(x, row("s-x")).version();
    b.clock().observeTimestamp(v2 + (1_000L << 16));
    b.write(x, row("b-x"));
    b.write(y, row("b-y"));
    assertTrue(b.drain(5_000), "B's puts are in every ring");
    assertEquals(0, s.nearestRingFor(List.of(x, y)));
    ReadResult r = s.readTxn(List.of(x, y));
    assertEquals("b-y", str(r.rows().get(y)));
    assertEquals("b-x", str(r.rows().get(x)), "y's writer wrote x after S did, with a larger version");
  }

  /** §4.2: a restricted client's own put lifts the restrictions from its earlier reads once it completes. */
  @Test
  void theClientsOwnWriteLiftsItsRestrictions() {
    String y = key("w-y", LDN, TYO);
    KvClient writer = cluster.client(VA);
    KarmaClient reader = client(CA, 600_000); // no notify-after in this test
    Clusters.slowLink(cluster, VA, LDN, 1_000); // y stays in flight a while: ring 0 gets it late
    writer.write(y, row("1"));
    long deadline = System.currentTimeMillis() + 5_000;
    while (reader.restrictions() == 0 && System.currentTimeMillis() < deadline) {
      reader.readTxn(List.of(y));
    }
    assertEquals(rings.ringOf(TYO), reader.restrictedRing(), "an in-flight read binds the reader to ring 1");
    Clusters.sleep(300);
    assertTrue(reader.restrictions() > 0, "nothing else lifts it");
    Clusters.slowLink(cluster, VA, LDN, 0);
    reader.write(key("w-own", CA, SG), row("mine"));
    assertTrue(reader.drain(5_000), "the reader's write completes");
    assertEquals(0, reader.restrictions(), "its completion lifted the restriction");
    assertEquals(-1, reader.restrictedRing());
  }

  /** §4.2: a client that never writes is released by write insertion (notify-after). */
  @Test
  void notifyAfterLiftsTheRestrictionsOfAClientThatNeverWrites() {
    String y = key("n-y", LDN, TYO);
    String z = key("n-z", CA, SG);
    KvClient writer = cluster.client(VA);
    KarmaClient reader = client(CA, 50);
    Clusters.slowLink(cluster, VA, LDN, 1_000); // y reaches ring 0 (LDN) a second late
    writer.write(y, row("1"));
    long deadline = System.currentTimeMillis() + 5_000;
    while (reader.restrictions() == 0 && System.currentTimeMillis() < deadline) {
      reader.readTxn(List.of(y));
    }
    assertTrue(reader.restrictions() > 0, "the reader read y in flight");
    // While y has not reached ring 0, a notify-after cannot complete there.
    for (int i = 0; i < 20; i++) {
      reader.readTxn(List.of(z));
      Clusters.sleep(10);
    }
    assertTrue(reader.restrictions() > 0, "still restricted while y is in flight");
    Clusters.slowLink(cluster, VA, LDN, 0);
    deadline = System.currentTimeMillis() + 5_000;
    while (reader.restrictions() > 0 && System.currentTimeMillis() < deadline) {
      ReadResult r = reader.readTxn(List.of(z)); // reads only: notify-after rides on them
      assertEquals(1, r.rows().size());
      Clusters.sleep(10);
    }
    assertEquals(0, reader.restrictions(), "a notify-after lifted the restriction without a write");
  }

  /** A read-only client stays bound while notify-after is off: the lifting above is notify-after's. */
  @Test
  void withoutNotifyAfterAReadOnlyClientStaysRestricted() {
    String y = key("s-y", LDN, TYO);
    String z = key("s-z", CA, SG);
    KvClient writer = cluster.client(VA);
    KarmaClient reader = client(CA, 600_000);
    Clusters.slowLink(cluster, VA, LDN, 100);
    writer.write(y, row("1"));
    long deadline = System.currentTimeMillis() + 5_000;
    while (reader.restrictions() == 0 && System.currentTimeMillis() < deadline) {
      reader.readTxn(List.of(y));
    }
    Clusters.slowLink(cluster, VA, LDN, 0);
    assertTrue(((KarmaClient) writer).drain(5_000), "y completes in every ring");
    for (int i = 0; i < 30; i++) {
      reader.readTxn(List.of(z));
      Clusters.sleep(10);
    }
    assertTrue(reader.restrictions() > 0, "no write and no notify-after: the restriction stays");
  }

  /**
   * A get-transaction (§4.5, Eiger's) of x and y in ring 1 from SG: x is SG's, y TYO's, and
   * the reader's request to TYO is 300 ms late. The first round reads x before a writer in VA
   * puts x then y, and y after: y's EVT is above x's old LVT, so the second round reads x at
   * the effective time. Returns the two values the transaction read, and how many second
   * rounds SG's servers answered.
   */
  private String[] fracturedCandidate(String prefix) throws InterruptedException {
    String x = key(prefix + "-x", CA, SG);
    String y = key(prefix + "-y", LDN, TYO);
    KvClient writer = cluster.client(VA);
    writer.write(x, row("old"));
    writer.write(y, row("old"));
    assertTrue(((KarmaClient) writer).drain(5_000));
    KarmaClient reader = client(SG, 600_000);
    assertEquals(rings.ringOf(SG), reader.nearestRingFor(List.of(x, y)), "the transaction reads ring 1");
    long secondRounds = cluster.stat(SG, "ring_reads_at");
    long firstRounds = cluster.stat(SG, "ring_reads");
    cluster.transport().links().setExtraDelayMs(SG, TYO, 300);
    ReadResult[] r = new ReadResult[1];
    Thread t = new Thread(() -> r[0] = reader.readTxn(List.of(x, y)));
    t.start();
    long deadline = System.currentTimeMillis() + 5_000;
    while (cluster.stat(SG, "ring_reads") == firstRounds && System.currentTimeMillis() < deadline) {
      Clusters.sleep(1); // until SG answered x's first round; y's request is on its way
    }
    writer.write(x, row("new"));
    writer.write(y, row("new"));
    t.join(5_000);
    return new String[] {str(r[0].rows().get(x)), str(r[0].rows().get(y)),
        Long.toString(cluster.stat(SG, "ring_reads_at") - secondRounds)};
  }

  @Test
  void aGetTransactionReadsAgainAtTheEffectiveTime() throws Exception {
    String[] got = fracturedCandidate("gt2");
    assertEquals("new", got[1], "the first round read y after the writer's put");
    assertEquals("new", got[0], "the second round read x at y's EVT");
    assertTrue(Long.parseLong(got[2]) > 0, "SG answered a second round");
  }

  @Test
  void withoutTheSecondRoundAGetTransactionReturnsYNewWithXOld() throws Exception {
    String[] got = Mutants.runWith(KarmaMutants.KARMA_SKIP_SECOND_ROUND, () -> {
      try {
        return fracturedCandidate("gt2m");
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    });
    assertEquals("new", got[1]);
    assertEquals("old", got[0], "x from before y's writer wrote it");
  }

  /**
   * §4.1.2: a get looks in the WB first. S (CA) puts x, whose rings CA reaches 1 s late, then
   * reads y, a stable value older than the put, at CA's own replica: the get of x that follows
   * is served from the WB, in well under the slowed round trip (a rule that sent every get
   * after a ring read to the ring took 2 s here).
   */
  @Test
  void anOwnWriteIsReadFromTheWriteBufferAfterReadsOfOlderValues() {
    String y = key("wb-y", CA, TYO);
    String x = key("wb-x", LDN, TYO);
    KarmaClient other = (KarmaClient) cluster.client(VA);
    other.write(y, row("y"));
    assertTrue(other.drain(5_000));
    Clusters.sleep(500); // y is stable at CA (a few ms; the rest is for a loaded machine's stalls)
    KarmaClient s = client(CA, 600_000);
    Clusters.slowLink(cluster, CA, LDN, 1_000);
    Clusters.slowLink(cluster, CA, TYO, 1_000);
    long mine = s.write(x, row("mine")).version();
    assertEquals("y", str(s.readTxn(List.of(y)).rows().get(y)));
    long start = System.nanoTime();
    ReadResult r = s.readTxn(List.of(x));
    long tookMs = (System.nanoTime() - start) / 1_000_000;
    assertEquals(mine, r.versions().get(x));
    assertEquals(0, r.wanRounds());
    assertTrue(tookMs < 1_000, "served from the WB, not the slowed rings (2 s away): " + tookMs + " ms");
    Clusters.slowLink(cluster, CA, LDN, 0);
    Clusters.slowLink(cluster, CA, TYO, 0);
    assertTrue(s.drain(5_000));
  }

  /**
   * A single-key get of a buffered own write x after reading y, whose writer B (TYO) wrote x
   * later than S did (a larger version) and then y: the get must return B's x. S's put of x
   * waits in its ring-0 queue behind a put to LDN, whose link is slowed. Returns what S reads.
   */
  private String ownWriteAfterANewerRead(String prefix) {
    String blocker = key(prefix + "-k", LDN, TYO);
    String x = key(prefix + "-x", CA, SG);
    String y = key(prefix + "-y", CA, TYO);
    KarmaClient s = client(CA, 600_000);
    KarmaClient b = (KarmaClient) cluster.client(TYO);
    Clusters.slowLink(cluster, CA, LDN, 2_000);
    s.write(blocker, row("s-k"));
    long mine = s.write(x, row("s-x")).version();
    // Not a 2 ms sleep: earlier tests push clocks ~4 ms ahead (observeTimestamp), which can
    // reach S through the servers and not B, and B's stamp then lost (a CI failure).
    b.clock().observeTimestamp(mine);
    assertTrue(b.write(x, row("b-x")).version() > mine, "B's x is the newer");
    b.write(y, row("b-y"));
    assertTrue(b.drain(5_000), "B's puts are in every ring");
    assertEquals("b-y", str(s.readTxn(List.of(y)).rows().get(y)));
    return str(s.readTxn(List.of(x)).rows().get(x));
  }

  @Test
  void aGetDoesNotReturnABufferedWriteOlderThanOneItDependsOn() {
    assertEquals("b-x", ownWriteAfterANewerRead("own"), "y's writer wrote x after S did");
  }

  @Test
  void withTheWriteBufferRuleAloneAGetReturnsTheOlderOwnWrite() {
    assertEquals("s-x", Mutants.runWith(KarmaMutants.KARMA_OWN_WRITE_ALWAYS, () -> ownWriteAfterANewerRead("ownm")));
  }
}
