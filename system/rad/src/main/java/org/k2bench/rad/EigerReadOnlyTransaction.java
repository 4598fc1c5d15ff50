package org.k2bench.rad;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.k2bench.core.api.Calls;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.data.Row;
import org.k2bench.rad.proto.CurrentVersion;
import org.k2bench.rad.proto.KeyAtTime;
import org.k2bench.rad.proto.ReadByTimeReply;
import org.k2bench.rad.proto.ReadByTimeRequest;
import org.k2bench.rad.proto.ReadReply;
import org.k2bench.rad.proto.ReadRequest;

/**
 * Eiger's read-only transaction, as RAD runs it (K2 §II-B):
 *
 * <ol>
 *   <li>Round 1 reads the currently visible version of each key, with its EVT and LVT,
 *       from the server of the client's group holding it.
 *   <li>The effective time is the largest EVT returned, at least the version of any of
 *       the session's own writes being read, and at least the largest EVT the session has
 *       read before ({@link RadClient#readFloor}). A key whose version is not valid then
 *       (LVT below it) is read again, at the effective time (round 2).
 *   <li>A round-2 server holding a pending write-only transaction that may commit below
 *       the effective time first asks the transaction's coordinator, which may be in yet
 *       another datacenter, and waits for the commit: a third wide-area round whenever
 *       that wait depends on another datacenter (the coordinator is there, or it is here
 *       and waits for participants there).
 * </ol>
 *
 * Round 2 sends one request per server. Rounds are counted as wide-area when any request
 * of the round crosses datacenters, and the resolution of pending transactions as one
 * more when any round-2 server reports a wide-area wait.
 */
final class EigerReadOnlyTransaction {
  private static final boolean SKIP_SECOND_ROUND =
      org.k2bench.core.testing.Mutants.active(RadMutants.RAD_SKIP_SECOND_ROUND);

  private final RadClient client;
  private final List<String> keys;
  private final Map<String, Row> rows = new LinkedHashMap<>();
  private final Map<String, Long> versions = new LinkedHashMap<>();
  private final Map<String, Double> staleness = new LinkedHashMap<>();
  private boolean round1Remote;
  private boolean round2Remote;

  private EigerReadOnlyTransaction(RadClient client, Collection<String> keysIn) {
    this.client = client;
    this.keys = List.copyOf(new LinkedHashSet<>(keysIn));
  }

  /**
   * Runs the transaction as callbacks on its replies: each round's requests go out at once,
   * and the next step runs on the thread that delivers the round's last reply.
   */
  static CompletableFuture<ReadResult> start(RadClient client, Collection<String> keys) {
    return new EigerReadOnlyTransaction(client, keys).round1();
  }

  private CompletableFuture<ReadResult> round1() {
    Map<Integer, List<String>> byServer = new HashMap<>();
    for (String k : keys) {
      byServer.computeIfAbsent(client.homeServer(k), s -> new ArrayList<>()).add(k);
    }
    List<CompletableFuture<ReadReply>> round1 = new ArrayList<>();
    for (Map.Entry<Integer, List<String>> e : byServer.entrySet()) {
      round1Remote |= client.isRemote(e.getKey());
      round1.add(client.call(e.getKey(), ReadRequest.newBuilder().addAllKeys(e.getValue()).build(),
          ReadReply.class, "read-only transaction, first round"));
    }
    return Calls.all(round1).thenCompose(this::round2);
  }

  private CompletableFuture<ReadResult> round2(List<ReadReply> replies) {
    Map<String, CurrentVersion> current = new HashMap<>();
    for (ReadReply r : replies) {
      for (CurrentVersion v : r.getKeysList()) {
        current.put(v.getKey(), v);
      }
    }
    long effective = client.readFloor(); // causality across the session's transactions (RadClient)
    for (CurrentVersion v : current.values()) {
      effective = Math.max(effective, v.getEvt());
    }
    for (String k : keys) {
      effective = Math.max(effective, client.ownWriteVersion(k)); // read-your-writes (RadClient)
    }
    Map<Integer, List<String>> round2Keys = new HashMap<>();
    for (String k : keys) {
      CurrentVersion v = current.get(k);
      if (v.getLvt() >= effective || SKIP_SECOND_ROUND) {
        rows.put(k, v.getValue());
        versions.put(k, v.getVersion());
        staleness.put(k, 0.0); // the current version is the newest
        client.sawEvt(v.getEvt());
      } else {
        round2Keys.computeIfAbsent(client.homeServer(k), s -> new ArrayList<>()).add(k);
      }
    }
    // Round 2: one request per server, with all of its keys.
    List<CompletableFuture<ReadByTimeReply>> round2 = new ArrayList<>();
    for (Map.Entry<Integer, List<String>> e : round2Keys.entrySet()) {
      round2Remote |= client.isRemote(e.getKey());
      round2.add(client.call(e.getKey(),
          ReadByTimeRequest.newBuilder().addAllKeys(e.getValue()).setTs(effective).build(), ReadByTimeReply.class,
          "read-only transaction, second round"));
    }
    return Calls.all(round2).thenApply(this::finish);
  }

  private ReadResult finish(List<ReadByTimeReply> replies) {
    boolean statusRemote = false;
    for (ReadByTimeReply r : replies) {
      for (KeyAtTime k : r.getKeysList()) {
        rows.put(k.getKey(), k.getValue());
        versions.put(k.getKey(), k.getVersion());
        staleness.put(k.getKey(), k.getStalenessMs());
        client.sawEvt(k.getEvt());
      }
      statusRemote |= r.getWideAreaWait();
    }
    int wanRounds = (round1Remote ? 1 : 0) + (round2Remote ? 1 : 0) + (statusRemote ? 1 : 0);
    Map<String, Row> orderedRows = new LinkedHashMap<>();
    Map<String, Long> orderedVersions = new LinkedHashMap<>();
    Map<String, Double> orderedStaleness = new LinkedHashMap<>();
    for (String k : keys) {
      orderedRows.put(k, rows.get(k));
      orderedVersions.put(k, versions.get(k));
      orderedStaleness.put(k, staleness.get(k));
    }
    return new ReadResult(orderedRows, orderedVersions, wanRounds, orderedStaleness);
  }
}
