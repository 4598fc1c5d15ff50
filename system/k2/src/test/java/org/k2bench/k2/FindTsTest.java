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
}
