package org.k2bench.k2;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.k2bench.core.api.Calls;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.data.Row;
import org.k2bench.k2.proto.KeyVersions;
import org.k2bench.k2.proto.ReadByTimeReplies;
import org.k2bench.k2.proto.ReadByTimeReply;
import org.k2bench.k2.proto.ReadByTimeRequest;
import org.k2bench.k2.proto.ReadReply;
import org.k2bench.k2.proto.ReadRequest;
import org.k2bench.k2.proto.VersionInfo;

/**
 * K2's cache-aware read-only transaction, the client algorithm of the K2 paper, Fig. 5:
 *
 * <pre>
 * function read_txn(keys):
 *   for k in keys: vers[k] = read(k, cli.read_ts)          # 1st round, local servers
 *   ts = find_ts(vers)
 *   for k in keys:
 *     for ver in vers[k]:
 *       if ver.evt <= ts <= ver.lvt and ver.val != null: vals[k] = ver.val; break
 *     if !vals.contains(k): vals[k] = read_by_time(k, ts)   # 2nd round, local servers
 *   cli.read_ts = max(cli.read_ts, ts)
 *   for k in keys: deps.add(k, vals[k].ver)
 * </pre>
 *
 * Both rounds go to servers of the client's own datacenter, one request per server with all
 * of its keys (the pseudocode's per-key reads, made in parallel, sent together: the client
 * waits for every key either way). A second-round server that lacks the value fetches that
 * exact version from the nearest replica datacenter, which is the transaction's only
 * possible wide-area round.
 */
final class ReadOnlyTransaction {
  private final K2Client client;
  private final List<String> keys;
  private final long readTs;
  private final Map<String, Row> rows = new LinkedHashMap<>();
  private final Map<String, Long> versions = new LinkedHashMap<>();
  private final Map<String, Double> staleness = new LinkedHashMap<>();
  private final Set<String> nonReplica = new java.util.HashSet<>();
  private long ts;
  private double snapshotLag;

  private ReadOnlyTransaction(K2Client client, Collection<String> keysIn) {
    this.client = client;
    this.keys = List.copyOf(new java.util.LinkedHashSet<>(keysIn));
    this.readTs = client.readTs();
  }

  /**
   * Runs the transaction as callbacks on its replies: each round's requests go out at once,
   * and the next step runs on the thread that delivers the round's last reply.
   */
  static CompletableFuture<ReadResult> start(K2Client client, Collection<String> keys) {
    return new ReadOnlyTransaction(client, keys).round1();
  }

  /** 1st round: every version valid at or after read_ts, from the local servers. */
  private CompletableFuture<ReadResult> round1() {
    List<CompletableFuture<ReadReply>> round1 = new ArrayList<>();
    client.groupByLocalServer(keys).forEach((server, ks) -> round1.add(client.call(server,
        ReadRequest.newBuilder().addAllKeys(ks).setReadTs(readTs).build(), ReadReply.class,
        "read-only transaction, first round")));
    return Calls.all(round1).thenCompose(this::round2);
  }

  /** find_ts over the first round's versions, then the 2nd round for the keys without a value at ts. */
  private CompletableFuture<ReadResult> round2(List<ReadReply> replies) {
    Map<String, List<VersionInfo>> vers = new HashMap<>();
    double readTsLag = 0;
    for (ReadReply reply : replies) {
      readTsLag = Math.max(readTsLag, reply.getReadTsLagMs());
      for (KeyVersions kv : reply.getKeysList()) {
        vers.put(kv.getKey(), withSessionValues(kv, client.sessionCache()));
      }
    }
    for (String k : keys) {
      if (!client.isReplicaKey(k)) {
        nonReplica.add(k);
      }
    }
    ts = findTs(vers, readTs, nonReplica);
    snapshotLag = snapshotLagMs(vers, ts, readTs, readTsLag);
    Map<Integer, List<String>> round2Keys = new LinkedHashMap<>();
    for (String k : keys) {
      VersionInfo v = validAt(vers.get(k), ts);
      if (v != null) {
        rows.put(k, v.getValue());
        versions.put(k, v.getVersion());
        staleness.put(k, v.getStalenessMs());
      } else {
        round2Keys.computeIfAbsent(client.localServerFor(k), s -> new ArrayList<>()).add(k);
      }
    }
    // 2nd round: read_by_time at ts, one request per local server with all of its keys
    // (each still read, waited for and fetched on its own there); the server fetches from
    // a replica DC if needed.
    List<List<String>> asked = new ArrayList<>();
    List<CompletableFuture<ReadByTimeReplies>> round2 = new ArrayList<>();
    round2Keys.forEach((server, ks) -> {
      asked.add(ks);
      round2.add(client.call(server, ReadByTimeRequest.newBuilder().addAllKeys(ks).setTs(ts).build(),
          ReadByTimeReplies.class, "read-only transaction, second round"));
    });
    return Calls.all(round2).thenApply(answers -> finish(asked, answers));
  }

  private ReadResult finish(List<List<String>> asked, List<ReadByTimeReplies> replies) {
    int wanRounds = 0;
    int remoteKeys = 0;
    for (int s = 0; s < replies.size(); s++) {
      List<String> ks = asked.get(s);
      List<ReadByTimeReply> answers = replies.get(s).getRepliesList();
      if (answers.size() != ks.size()) {
        throw new org.k2bench.core.api.OperationFailedException("second round: " + answers.size()
            + " answers for " + ks.size() + " keys", null);
      }
      for (int i = 0; i < answers.size(); i++) {
        ReadByTimeReply r = answers.get(i);
        String k = ks.get(i);
        rows.put(k, r.getValue());
        versions.put(k, r.getVersion());
        staleness.put(k, r.getStalenessMs());
        if (r.getRemote()) {
          remoteKeys++;
          // One round by design; a fail-over to another replica datacenter adds one each.
          wanRounds = Math.max(wanRounds, 1 + r.getFailovers());
        }
      }
    }
    client.afterRead(ts, versions);
    Map<String, Row> ordered = new LinkedHashMap<>();
    Map<String, Long> orderedVersions = new LinkedHashMap<>();
    Map<String, Double> orderedStaleness = new LinkedHashMap<>();
    for (String k : keys) {
      ordered.put(k, rows.get(k));
      orderedVersions.put(k, versions.get(k));
      orderedStaleness.put(k, staleness.get(k));
    }
    return new ReadResult(ordered, orderedVersions, wanRounds, orderedStaleness, snapshotLag,
        nonReplica.size(), remoteKeys);
  }

  /**
   * How long ago {@code ts} was the present at the reading servers: the lag a server
   * reported for the version whose EVT is {@code ts}, or for read_ts (the largest, i.e.
   * since the first local server passed it).
   */
  static double snapshotLagMs(Map<String, List<VersionInfo>> vers, long ts, long readTs, double readTsLag) {
    double lag = -1;
    for (List<VersionInfo> vs : vers.values()) {
      for (VersionInfo v : vs) {
        if (v.getEvt() == ts) {
          lag = Math.max(lag, v.getEvtLagMs());
        }
      }
    }
    if (ts == readTs) {
      lag = Math.max(lag, readTsLag);
    }
    return Math.max(0, lag);
  }

  /**
   * The first-round versions of a key, with values the session holds itself filled in
   * (PaRiS*'s private cache; nothing for K2). A withheld version stays without a value: a
   * pending transaction may still change which version is valid there.
   */
  static List<VersionInfo> withSessionValues(KeyVersions kv, SessionCache cache) {
    if (cache == SessionCache.NONE) {
      return kv.getVersionsList();
    }
    List<VersionInfo> out = new ArrayList<>(kv.getVersionsCount());
    for (VersionInfo v : kv.getVersionsList()) {
      Row own = v.getHasValue() || v.getWithheld() ? null : cache.get(kv.getKey(), v.getVersion());
      out.add(own == null ? v : v.toBuilder().setHasValue(true).setValue(own).build());
    }
    return out;
  }

  /** The version valid at {@code ts} whose value came back in the first round, or null. */
  static VersionInfo validAt(List<VersionInfo> versions, long ts) {
    if (versions == null) {
      return null;
    }
    for (VersionInfo v : versions) {
      if (v.getEvt() <= ts && ts <= v.getLvt() && v.getHasValue()) {
        return v;
      }
    }
    return null;
  }

  /**
   * find_ts (K2 §V-C): among the EVTs of the returned versions, the earliest time at which
   * (1) every key has a value, else (2) every non-replica key has a value, else (3) the
   * most keys have a value. Values are those returned in the first round (stored or
   * cached locally); replica keys can always be read locally in the second round, which is
   * why rule (2) only asks for the non-replica ones.
   *
   * <p>Candidates are at least read_ts (causality) and at least each key's earliest
   * returned EVT: older versions were not offered (they are about to be collected), so a
   * time before them could not be read.
   */
  static long findTs(Map<String, List<VersionInfo>> vers, long readTs, Set<String> nonReplicaKeys) {
    long floor = readTs;
    TreeSet<Long> evts = new TreeSet<>();
    for (List<VersionInfo> vs : vers.values()) {
      if (!vs.isEmpty()) {
        floor = Math.max(floor, vs.get(0).getEvt());
      }
      for (VersionInfo v : vs) {
        evts.add(v.getEvt());
      }
    }
    List<Long> candidates = new ArrayList<>();
    candidates.add(floor);
    candidates.addAll(evts.tailSet(floor, false));

    Long allNonReplica = null;
    long most = floor;
    int mostCount = -1;
    for (long c : candidates) {
      int valid = 0;
      boolean nonReplicaValid = true;
      for (Map.Entry<String, List<VersionInfo>> e : vers.entrySet()) {
        if (validAt(e.getValue(), c) != null) {
          valid++;
        } else if (nonReplicaKeys.contains(e.getKey())) {
          nonReplicaValid = false;
        }
      }
      if (valid == vers.size()) {
        return c; // rule 1: every key has a value at c
      }
      if (nonReplicaValid && allNonReplica == null) {
        allNonReplica = c;
      }
      if (valid > mostCount) {
        mostCount = valid;
        most = c;
      }
    }
    return allNonReplica != null ? allNonReplica : most; // rule 2, else rule 3
  }
}
