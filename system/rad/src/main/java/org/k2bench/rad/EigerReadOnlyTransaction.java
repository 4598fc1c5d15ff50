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
import org.k2bench.rad.proto.ReadByTimeReply;
import org.k2bench.rad.proto.ReadByTimeRequest;
import org.k2bench.rad.proto.ReadReply;
import org.k2bench.rad.proto.ReadRequest;

/**
 * Eiger's read-only transaction, as RAD runs it (K2 §II-B, SPEC §3.2):
 *
 * <ol>
 *   <li>Round 1 reads the currently visible version of each key, with its EVT and LVT,
 *       from the server of the client's group holding it.
 *   <li>The effective time is the largest EVT returned, and at least the version of any of
 *       the session's own writes being read. A key whose version is not valid then (LVT
 *       below it) is read again, at the effective time (round 2).
 *   <li>A round-2 server holding a pending write-only transaction that may commit below
 *       the effective time first asks the transaction's coordinator, which may be in yet
 *       another datacenter: a third wide-area round.
 * </ol>
 *
 * Rounds are counted as wide-area when any request of the round crosses datacenters.
 */
final class EigerReadOnlyTransaction {
  private static final boolean SKIP_SECOND_ROUND =
      org.k2bench.core.testing.Mutants.active(org.k2bench.core.testing.Mutants.RAD_SKIP_SECOND_ROUND);

  private EigerReadOnlyTransaction() {}

  static ReadResult run(RadClient client, Collection<String> keysIn) {
    List<String> keys = List.copyOf(new LinkedHashSet<>(keysIn));
    Map<Integer, List<String>> byServer = new HashMap<>();
    for (String k : keys) {
      byServer.computeIfAbsent(client.homeServer(k), s -> new ArrayList<>()).add(k);
    }
    boolean round1Remote = false;
    List<CompletableFuture<ReadReply>> round1 = new ArrayList<>();
    for (Map.Entry<Integer, List<String>> e : byServer.entrySet()) {
      round1Remote |= client.isRemote(e.getKey());
      round1.add(client.endpoint().call(e.getKey(),
          ReadRequest.newBuilder().addAllKeys(e.getValue()).build(), ReadReply.class));
    }
    Map<String, CurrentVersion> current = new HashMap<>();
    for (CompletableFuture<ReadReply> f : round1) {
      for (CurrentVersion v : Calls.await(f, "read-only transaction, first round", client.timeoutMs()).getKeysList()) {
        current.put(v.getKey(), v);
      }
    }

    long effective = 0;
    for (CurrentVersion v : current.values()) {
      effective = Math.max(effective, v.getEvt());
    }
    for (String k : keys) {
      effective = Math.max(effective, client.ownWriteVersion(k)); // read-your-writes (RadClient)
    }
    Map<String, Row> rows = new LinkedHashMap<>();
    Map<String, Long> versions = new LinkedHashMap<>();
    Map<String, Double> staleness = new LinkedHashMap<>();
    Map<String, CompletableFuture<ReadByTimeReply>> round2 = new LinkedHashMap<>();
    boolean round2Remote = false;
    for (String k : keys) {
      CurrentVersion v = current.get(k);
      if (v.getLvt() >= effective || SKIP_SECOND_ROUND) {
        rows.put(k, v.getValue());
        versions.put(k, v.getVersion());
        staleness.put(k, 0.0); // the current version is the newest
      } else {
        int server = client.homeServer(k);
        round2Remote |= client.isRemote(server);
        round2.put(k, client.endpoint().call(server,
            ReadByTimeRequest.newBuilder().setKey(k).setTs(effective).build(), ReadByTimeReply.class));
      }
    }
    boolean statusRemote = false;
    for (Map.Entry<String, CompletableFuture<ReadByTimeReply>> e : round2.entrySet()) {
      ReadByTimeReply r = Calls.await(e.getValue(), "read-only transaction, second round", client.timeoutMs());
      rows.put(e.getKey(), r.getValue());
      versions.put(e.getKey(), r.getVersion());
      staleness.put(e.getKey(), r.getStalenessMs());
      statusRemote |= r.getRemoteStatusCheck();
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
