package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.k2bench.k2.proto.VersionInfo;

/** find_ts (K2 §V-C) on hand-built first-round answers. */
class FindTsTest {
  static VersionInfo v(long evt, long lvt, boolean value) {
    return VersionInfo.newBuilder().setVersion(evt).setEvt(evt).setLvt(lvt).setHasValue(value).build();
  }

  @Test
  void paperFigure4ReadsTheCachedVersionsRatherThanTheNewest() {
    // A and C non-replica with a1, c1 cached; B a replica key. The newest time (12) would
    // need two remote fetches; K2 reads at 3.
    Map<String, List<VersionInfo>> vers = Map.of(
        "A", List.of(v(1, 9, true), v(10, 20, false)),
        "B", List.of(v(2, 11, true), v(12, 20, true)),
        "C", List.of(v(3, 11, true), v(12, 20, false)));
    assertEquals(3, ReadOnlyTransaction.findTs(vers, 0, Set.of("A", "C")));
  }

  @Test
  void rule2PrefersAllNonReplicaKeysOverMostKeys() {
    // No time has every key; at 10 both non-replica keys have values (replica key R is read locally).
    Map<String, List<VersionInfo>> vers = Map.of(
        "N1", List.of(v(1, 9, false), v(10, 30, true)),
        "N2", List.of(v(2, 30, true)),
        "R1", List.of(v(1, 5, true), v(6, 30, false)),
        "R2", List.of(v(1, 5, true), v(6, 30, false)));
    assertEquals(10, ReadOnlyTransaction.findTs(vers, 0, Set.of("N1", "N2")));
  }

  @Test
  void rule3TakesTheEarliestTimeWithTheMostValues() {
    Map<String, List<VersionInfo>> vers = Map.of(
        "N1", List.of(v(1, 9, true), v(10, 30, false)),
        "N2", List.of(v(1, 4, false), v(5, 30, true)),
        "N3", List.of(v(1, 30, false)));
    // At 1: N1 only; at 5: N1 and N2; at 10: N2 only. Nothing has N3.
    assertEquals(5, ReadOnlyTransaction.findTs(vers, 0, Set.of("N1", "N2", "N3")));
  }

  @Test
  void neverReadsBeforeReadTsOrBeforeAKeysOldestOfferedVersion() {
    Map<String, List<VersionInfo>> vers = Map.of(
        "A", List.of(v(1, 30, true)),
        "B", List.of(v(8, 30, true)));
    assertEquals(8, ReadOnlyTransaction.findTs(vers, 0, Set.of("A", "B")), "B offers nothing before 8");
    assertEquals(15, ReadOnlyTransaction.findTs(vers, 15, Set.of("A", "B")), "causality: at least read_ts");
  }

  /**
   * Several times satisfy each rule; find_ts takes the earliest (§V-C: "the earliest EVT
   * where ..."), not the latest or the newest: the reader stays where values are local
   * even when fresher all-local times exist.
   */
  @Test
  void eachRuleTakesTheEarliestQualifyingTimeNotTheLatest() {
    // Rule 1 holds at 2 (a1, b1), at 10 (a2, b1) and at 20 (a2, b2): 2.
    Map<String, List<VersionInfo>> rule1 = Map.of(
        "A", List.of(v(1, 9, true), v(10, 40, true)),
        "B", List.of(v(2, 19, true), v(20, 40, true)));
    assertEquals(2, ReadOnlyTransaction.findTs(rule1, 0, Set.of("A", "B")));
    // Rule 2 (R a replica key, never valued here) holds at 2 and at 20: 2.
    Map<String, List<VersionInfo>> rule2 = Map.of(
        "A", List.of(v(1, 9, true), v(10, 19, false), v(20, 40, true)),
        "B", List.of(v(2, 40, true)),
        "R", List.of(v(1, 40, false)));
    assertEquals(2, ReadOnlyTransaction.findTs(rule2, 0, Set.of("A", "B")));
    // Rule 3: two values at 5 and again at 30, never three: 5.
    Map<String, List<VersionInfo>> rule3 = Map.of(
        "A", List.of(v(1, 29, true), v(30, 50, true)),
        "B", List.of(v(1, 4, false), v(5, 9, true), v(10, 29, false), v(30, 50, true)),
        "C", List.of(v(1, 50, false)));
    assertEquals(5, ReadOnlyTransaction.findTs(rule3, 0, Set.of("A", "B", "C")));
  }
}
