package org.k2bench.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.Systems;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.testing.TestOptions;

/**
 * The three bundled systems on the same scripted sequence of operations: K2 never takes
 * more wide-area rounds than RAD or PaRiS* for the same read-only transaction, and its
 * write-only transactions are local where RAD's wait for the group's datacenters.
 */
class CrossSystemTest {
  /**
   * The wide-area rounds of every read-only transaction of the script, in order; of the
   * same session's immediate re-read of the same keys, where it returned the same versions
   * (a write that arrives in between can move the re-read to newer versions, which it may
   * have to fetch: K2 stops offering a superseded version older than the GC window); and
   * the latency of a write-only transaction.
   */
  record Outcome(List<Integer> rounds, List<Integer> rereads, double wotMs) {}

  /** Extra one-way delay on VA's wide-area links while the write-only transaction is timed. */
  static final double WAN_EXTRA_MS = 1_000;

  static List<String> keys(Placement p) {
    List<String> used = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    int[][] positions = {{VA, CA}, {SP, LDN}, {TYO, SG}};
    for (int i = 0; i < 12; i++) {
      keys.add(Clusters.key(p, "x", i % 2, positions[i % 3], used));
    }
    return keys;
  }

  static Outcome runScript(String system) {
    try (LocalCluster cluster = Clusters.start(Systems.byName("system", system), TestOptions.defaults())) {
      List<String> keys = keys(cluster.placement());
      KvClient[] writers = new KvClient[6];
      for (int dc = 0; dc < 6; dc++) {
        writers[dc] = cluster.client(dc);
      }
      KvClient readerVa = cluster.client(VA);
      KvClient readerSg = cluster.client(SG);
      List<Integer> rounds = new ArrayList<>();
      List<Integer> rereads = new ArrayList<>();
      for (int i = 0; i < 24; i++) {
        Map<String, Row> w = new LinkedHashMap<>();
        for (int j = 0; j < 3; j++) {
          w.put(keys.get((i + 4 * j) % keys.size()), row("v" + i));
        }
        writers[i % 6].writeTxn(w);
        Clusters.sleep(40); // replication settles (the scaled matrix's largest RTT is 33 ms)
        for (KvClient reader : new KvClient[] {readerVa, readerSg}) {
          Clusters.advance(reader);
          List<String> read = new ArrayList<>();
          for (int j = 0; j < 5; j++) {
            read.add(keys.get((i + 5 * j + reader.dc()) % keys.size()));
          }
          ReadResult first = reader.readTxn(read);
          rounds.add(first.wanRounds());
          if (reader == readerVa) {
            ReadResult again = reader.readTxn(read);
            if (again.versions().equals(first.versions())) {
              rereads.add(again.wanRounds());
            }
          }
        }
      }
      // A write-only transaction from VA to keys held in VA, SP and TYO (RAD's group of VA).
      Map<String, Row> w = new LinkedHashMap<>();
      w.put(keys.get(0), row("w"));
      w.put(keys.get(1), row("w"));
      w.put(keys.get(2), row("w"));
      writers[VA].writeTxn(w);
      // VA's links 1 s slower: a wait for another datacenter shows far above what a loaded
      // machine's stalls add to a local commit.
      Clusters.slowWideArea(cluster, VA, WAN_EXTRA_MS);
      long start = System.nanoTime();
      writers[VA].writeTxn(w);
      return new Outcome(rounds, rereads, (System.nanoTime() - start) / 1e6);
    }
  }

  @Test
  void k2TakesNoMoreWideAreaRoundsThanRadOrParisStar() {
    Outcome k2 = runScript("k2");
    Outcome rad = runScript("rad");
    Outcome paris = runScript("paris-star");
    for (int i = 0; i < k2.rounds().size(); i++) {
      assertTrue(k2.rounds().get(i) <= rad.rounds().get(i), "read " + i + ": K2 " + k2 + " vs RAD " + rad);
      assertTrue(k2.rounds().get(i) <= paris.rounds().get(i), "read " + i + ": K2 " + k2 + " vs PaRiS* " + paris);
      assertTrue(k2.rounds().get(i) <= 1, "K2 takes at most one wide-area round");
      assertTrue(paris.rounds().get(i) <= 1, "PaRiS* takes at most one wide-area round");
    }
    int k2Total = k2.rounds().stream().mapToInt(Integer::intValue).sum();
    int radTotal = rad.rounds().stream().mapToInt(Integer::intValue).sum();
    int parisTotal = paris.rounds().stream().mapToInt(Integer::intValue).sum();
    System.out.printf("wide-area rounds over %d reads: K2 %d %s, PaRiS* %d %s, RAD %d %s;"
            + " write-only transaction from VA: K2 %.1f ms, RAD %.1f ms%n", k2.rounds().size(),
        k2Total, k2.rounds(), parisTotal, paris.rounds(), radTotal, rad.rounds(), k2.wotMs(), rad.wotMs());
    assertTrue(k2Total < parisTotal && parisTotal < radTotal,
        "total rounds K2 " + k2Total + " < PaRiS* " + parisTotal + " < RAD " + radTotal);
    assertTrue(k2.rounds().contains(0), "K2 serves some read-only transactions all-locally: " + k2.rounds());
    // What a read just fetched stays in K2's DC cache; PaRiS* has none, so it fetches again.
    assertTrue(k2.rereads().size() >= 18 && paris.rereads().size() >= 18,
        "most re-reads return what the read did: " + k2.rereads().size() + ", " + paris.rereads().size() + " of 24");
    assertTrue(k2.rereads().stream().allMatch(r -> r == 0), "K2 re-reads from its DC cache: " + k2.rereads());
    assertTrue(paris.rereads().stream().allMatch(r -> r == 1), "PaRiS* fetches again: " + paris.rereads());
    assertTrue(rad.rounds().stream().anyMatch(r -> r >= 2) || radTotal > rad.rounds().size(),
        "RAD needs more than one round for some: " + rad.rounds());

    double radRtt = Clusters.topology(1).rttMs(VA, TYO) + 2 * WAN_EXTRA_MS;
    assertTrue(rad.wotMs() >= radRtt, "RAD's write-only transaction waits for TYO: " + rad.wotMs() + " ms");
    assertTrue(k2.wotMs() < WAN_EXTRA_MS, "K2's commits in VA: " + k2.wotMs() + " ms");
    assertEquals(k2.rounds().size(), 48);
  }
}
