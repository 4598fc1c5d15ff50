package org.k2bench.core.txn;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Dep;
import org.k2bench.core.data.Row;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.MalformedMessageException;
import org.k2bench.core.txn.proto.CheckStatus;
import org.k2bench.core.txn.proto.Commit;
import org.k2bench.core.txn.proto.DepCheck;
import org.k2bench.core.txn.proto.DepOk;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Notify;
import org.k2bench.core.txn.proto.Prepare;
import org.k2bench.core.txn.proto.Prepared;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicateAck;
import org.k2bench.core.txn.proto.ReplicatedKey;
import org.k2bench.core.txn.proto.StatusReply;
import org.k2bench.core.txn.proto.WotReply;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Eiger-style write-only transactions at one server, shared by K2 and RAD: two-phase
 * commit with a coordinator key, and the commit of replicated transactions after cohort
 * notifications and one-hop dependency checks (K2 §III-C, §IV-A; Eiger). The systems
 * differ in where participants live, which {@link Host#homeServer} answers (K2: the
 * local datacenter; RAD: the server's replica group), in how a committed transaction is
 * replicated, and in how a committed key is applied.
 *
 * <p>Runs on its server's thread, like the rest of the server: every handler and every
 * future continuation below executes on {@code thread}.
 */
public final class WriteTransactions {
  private static final Logger LOG = LoggerFactory.getLogger(WriteTransactions.class);
  private static final int RECENT_COMMITS = 100_000;

  /** What a system supplies. */
  public interface Host {
    /** The server holding {@code key} in this server's replica (the participant for it). */
    int homeServer(String key);

    /** No client of this replica wrote it: a replicated write ({@link #apply}'s {@code writer}). */
    int REPLICATED = -1;

    /**
     * Applies one committed key. {@code value} is null for metadata-only replication;
     * {@code writer} is the client of this replica that wrote it, or {@link #REPLICATED}.
     */
    void apply(String key, long txnId, long version, long evt, Row value, int writer);

    /** A client transaction committed here: replicate this participant's sub-request. */
    void replicate(WotSubRequest sub, long version);

    /** Replicated data arrived and is stored, not yet committed (K2's IncomingWrites). */
    default void incoming(String key, long version, Row value) {}

    /**
     * Metadata arrived for a version that only these replica datacenters are known to have
     * (K2's second phase names them when replication went on without one, §IV-A); empty:
     * all of them.
     */
    default void replicasWithData(String key, long version, List<Integer> dcs) {}

    /** Counts a protocol event for {@link org.k2bench.core.api.ServerNode#stats()}. */
    void count(String stat);

    /** Runs {@code r} on the server thread after {@code delayMs}. */
    void later(long delayMs, Runnable r);

    /**
     * A replicated sub-request from node {@code from} arrived and was stored (not a copy of
     * one committed here already).
     */
    default void replicated(Replicate r, int from) {}
  }

  /**
   * A replicated transaction became visible here: records the replication lag, from its
   * commit in {@code originDc} (wall clock there) to now, per datacenter pair.
   */
  private void recordReplicationLag(int originDc, long originCommitMs) {
    if (originCommitMs <= 0) {
      return;
    }
    long lagUs = Math.max(0, (System.currentTimeMillis() - originCommitMs) * 1000);
    org.k2bench.core.metrics.ProcessMetrics.record(
        "replication_lag:" + topology.dcName(originDc) + ">" + topology.dcName(ep.dc()), lagUs);
  }

  private record VKey(String key, long version) {}

  private final Endpoint ep;
  private final Executor thread;
  private final Topology topology;
  private final MultiVersionStore<Row> store;
  private final Host host;
  private final LamportClock clock;
  private final Map<Long, ClientTxn> clientTxns = new HashMap<>();
  private final Map<Long, ReplicatedTxn> replicatedTxns = new HashMap<>();
  /** Replicated data not yet committed, readable only by exact version (IncomingWrites). */
  private final Map<VKey, Row> incomingWrites = new HashMap<>();
  /** EVTs of transactions this server coordinated, for status checks; bounded. */
  private final Map<Long, Long> recentCommits = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Long> eldest) {
      return size() > RECENT_COMMITS;
    }
  };
  /** Status checks waiting for a transaction this server coordinates to commit, with their deadline. */
  private final Map<Long, List<StatusWaiter>> statusWaiters = new HashMap<>();

  private record StatusWaiter(Incoming m, long deadlineMs) {}
  /** txn id -> its coordinator, for pending transactions at this participant. */
  private final Map<Long, Integer> coordinators = new HashMap<>();
  /** Replicated transactions committed here lately, so a late or repeated Prepare still gets a yes. */
  private final Map<Long, Boolean> recentReplicatedCommits = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
      return size() > RECENT_COMMITS;
    }
  };
  /**
   * Client transactions committed here as a cohort lately, so a repeated sub-request (a
   * client that sent it again) does not prepare its keys again; bounded.
   */
  private final Map<Long, Boolean> recentCohortCommits = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
      return size() > RECENT_COMMITS;
    }
  };
  /** How long a server waits for something another node owes it before giving up or asking again. */
  private final long waitTimeoutMs;
  /** A dependency check's error at its wait timeout: the sender asks again at once. */
  static final String NOT_YET = "not committed here yet";
  /** Repeats a cohort's messages to a coordinator in another datacenter; null: sent once. */
  private final org.k2bench.core.server.Retransmitter retx;

  /**
   * @param waitTimeoutMs how long a dependency check waits here before answering "not yet"
   *     (the asking coordinator asks again), and how long a status check waits for the
   *     coordinator's answer; the RPC timeout
   */
  public WriteTransactions(Endpoint ep, Executor thread, MultiVersionStore<Row> store, Host host, long waitTimeoutMs) {
    this(ep, thread, store, host, waitTimeoutMs, null);
  }

  /**
   * As above; {@code retx} repeats a cohort's Prepared and Notify to a coordinator in another
   * datacenter while the cohort still waits for the Commit (a lost message, either way, is
   * then repaired: the coordinator answers a repeat of a committed transaction with the
   * Commit again). Null: each is sent once.
   */
  public WriteTransactions(Endpoint ep, Executor thread, MultiVersionStore<Row> store, Host host, long waitTimeoutMs,
      org.k2bench.core.server.Retransmitter retx) {
    this.retx = retx;
    this.ep = ep;
    this.thread = thread;
    this.topology = ep.transport().topology();
    this.store = store;
    this.host = host;
    this.clock = ep.clock();
    this.waitTimeoutMs = waitTimeoutMs;
  }

  /** Handles the message if it belongs to write-only transactions; false otherwise. */
  public boolean handle(Incoming m) {
    if (m.is(WotSubRequest.class)) {
      onSubRequest(m, m.as(WotSubRequest.class));
    } else if (m.is(Prepared.class)) {
      onPrepared(m.from(), m.as(Prepared.class));
    } else if (m.is(Commit.class)) {
      onCommit(m.as(Commit.class));
    } else if (m.is(Replicate.class)) {
      onReplicate(m, m.as(Replicate.class));
    } else if (m.is(Notify.class)) {
      onNotify(m.from(), m.as(Notify.class));
    } else if (m.is(DepCheck.class)) {
      onDepCheck(m, m.as(DepCheck.class));
    } else if (m.is(Prepare.class)) {
      onPrepare(m, m.as(Prepare.class));
    } else if (m.is(CheckStatus.class)) {
      onCheckStatus(m, m.as(CheckStatus.class));
    } else {
      return false;
    }
    return true;
  }

  private void checkHome(String key) {
    if (host.homeServer(key) != ep.id()) {
      throw new MalformedMessageException("key '" + key + "' is held by server " + host.homeServer(key)
          + ", not by server " + ep.id());
    }
  }

  /** Replicated data of an exact version that is not committed here yet, or null. */
  public Row incoming(String key, long version) {
    return incomingWrites.get(new VKey(key, version));
  }

  // =================================================================== client transactions

  /** A client's write-only transaction at one participant. */
  private static final class ClientTxn {
    final long id;
    WotSubRequest sub;
    Incoming client;
    /** The client that sent the sub-request (the writer). */
    int writer = Host.REPLICATED;
    final Set<Integer> cohorts = new HashSet<>();
    boolean committed;

    ClientTxn(long id) {
      this.id = id;
    }
  }

  private void onSubRequest(Incoming m, WotSubRequest sub) {
    if (sub.getWritesCount() == 0 || sub.getNumParticipants() < 1) {
      throw new MalformedMessageException("write-only sub-request " + sub.getTxnId() + " has no writes");
    }
    for (KeyValue kv : sub.getWritesList()) {
      checkHome(kv.getKey());
    }
    // A repeated sub-request of a transaction decided here already: the coordinator answers
    // the decision again (a second commit would write it again under another version), a
    // cohort drops it (preparing again would leave its keys pending for good).
    Long committed = sub.getCoordinator() == ep.id() ? recentCommits.get(sub.getTxnId()) : null;
    if (committed != null) {
      host.count("wot_duplicates");
      m.reply(WotReply.newBuilder().setVersion(committed).build());
      return;
    }
    if (sub.getCoordinator() != ep.id() && recentCohortCommits.containsKey(sub.getTxnId())) {
      host.count("wot_duplicates");
      return;
    }
    ClientTxn t = clientTxns.computeIfAbsent(sub.getTxnId(), ClientTxn::new);
    t.sub = sub;
    t.writer = m.from();
    long prepareTs = clock.nextTimestamp();
    coordinators.put(t.id, sub.getCoordinator());
    for (KeyValue kv : sub.getWritesList()) {
      store.prepare(kv.getKey(), t.id, prepareTs);
    }
    if (sub.getCoordinator() == ep.id()) {
      t.client = m;
      maybeCommitClientTxn(t);
    } else {
      toCoordinator(sub.getCoordinator(), Prepared.newBuilder().setTxnId(t.id).setPrepareTs(prepareTs).build(),
          () -> clientTxns.containsKey(t.id));
    }
  }

  /**
   * A cohort's message to its coordinator: sent once in this datacenter; to another one,
   * repeated while {@code waiting} (the Commit has not come), so that neither it nor the
   * Commit is lost for good on a link that drops messages.
   */
  private void toCoordinator(int coordinator, com.google.protobuf.Message msg, java.util.function.BooleanSupplier waiting) {
    if (retx != null && topology.dcOfServer(coordinator) != ep.dc()) {
      retx.repeat(coordinator, msg, waiting);
    } else {
      ep.send(coordinator, msg);
    }
  }

  /** Coordinator: a cohort prepared ("Yes"); cohorts make themselves known this way. */
  private void onPrepared(int cohort, Prepared p) {
    Long evt = recentCommits.get(p.getTxnId());
    if (evt != null) {
      // A repeat from a cohort whose Commit was lost (or is still on its way): commit again.
      host.count("commit_resends");
      ep.send(cohort, Commit.newBuilder().setTxnId(p.getTxnId()).setVersion(evt).setEvt(evt).build());
      return;
    }
    ClientTxn t = clientTxns.computeIfAbsent(p.getTxnId(), ClientTxn::new);
    t.cohorts.add(cohort);
    maybeCommitClientTxn(t);
  }

  /** Coordinator: once every cohort prepared, version = EVT = the current Lamport time. */
  private void maybeCommitClientTxn(ClientTxn t) {
    if (t.sub == null || t.client == null || t.committed
        || t.cohorts.size() < t.sub.getNumParticipants() - 1) {
      return;
    }
    t.committed = true;
    long version = clock.nextTimestamp();
    host.count("client_wots");
    clientTxns.remove(t.id);
    coordinators.remove(t.id);
    for (KeyValue kv : t.sub.getWritesList()) {
      host.apply(kv.getKey(), t.id, version, version, kv.getValue(), t.writer);
    }
    Commit commit = Commit.newBuilder().setTxnId(t.id).setVersion(version).setEvt(version).build();
    for (int cohort : t.cohorts) {
      ep.send(cohort, commit);
    }
    t.client.reply(WotReply.newBuilder().setVersion(version).build());
    committedAsCoordinator(t.id, version);
    host.replicate(t.sub, version);
  }

  private void onCommit(Commit c) {
    coordinators.remove(c.getTxnId());
    ClientTxn t = clientTxns.remove(c.getTxnId());
    if (t != null && t.sub != null) {
      recentCohortCommits.put(t.id, Boolean.TRUE);
      for (KeyValue kv : t.sub.getWritesList()) {
        host.apply(kv.getKey(), t.id, c.getVersion(), c.getEvt(), kv.getValue(), t.writer);
      }
      host.replicate(t.sub, c.getVersion());
      return;
    }
    ReplicatedTxn r = replicatedTxns.remove(c.getTxnId());
    if (r != null) {
      commitReplicated(r, c.getEvt());
    }
  }

  // =================================================================== replicated transactions

  /** A replicated write-only transaction at one participant of another replica. */
  private static final class ReplicatedTxn {
    final long version;
    String coordinatorKey;
    int numParticipants;
    int expectedKeys = -1;
    final Map<String, ReplicatedKey> keys = new HashMap<>();
    int originDc = -1;
    long originCommitMs;
    /** Its participants here, if the sender said (RAD). */
    final Set<Integer> participants = new HashSet<>();
    /** One-hop dependencies, from the origin coordinator's message (a set: see OneHopDeps). */
    final Set<Dep> deps = new HashSet<>();
    boolean complete;
    // coordinator only
    final Set<Integer> cohorts = new HashSet<>();
    int depsPending = -1;
    boolean preparing;
    boolean committed;
    int prepareRounds;

    ReplicatedTxn(long version) {
      this.version = version;
    }
  }

  private void onReplicate(Incoming m, Replicate r) {
    if (!replicatedTxns.containsKey(r.getVersion()) && alreadyCommitted(r)) {
      // A resent copy of a sub-request committed here already (K2 resends the first phase
      // to a replica that did not answer in time): acknowledge it, change nothing.
      host.count("replicate_duplicates");
      if (m.expectsReply()) {
        if (dataStillHere(r)) {
          m.reply(ReplicateAck.getDefaultInstance());
        } else {
          m.replyError("version " + LamportClock.format(r.getVersion()) + " was committed here and its data "
              + "garbage-collected since");
        }
      }
      return;
    }
    ReplicatedTxn t = replicatedTxns.computeIfAbsent(r.getVersion(), ReplicatedTxn::new);
    t.coordinatorKey = r.getCoordinatorKey();
    t.numParticipants = r.getNumParticipants();
    t.expectedKeys = r.getSubrequestKeys();
    t.originDc = r.getOriginDc();
    t.participants.addAll(r.getParticipantsList());
    t.originCommitMs = Math.max(t.originCommitMs, r.getOriginCommitMs());
    for (Dep d : r.getDepsList()) {
      if (d.getVersion() != 0) { // the initial version is committed everywhere
        t.deps.add(d);
      }
    }
    for (ReplicatedKey k : r.getKeysList()) {
      checkHome(k.getKey());
      t.keys.put(k.getKey(), k);
      if (k.getHasValue()) {
        incomingWrites.put(new VKey(k.getKey(), r.getVersion()), k.getValue());
        host.incoming(k.getKey(), r.getVersion(), k.getValue());
      } else {
        host.replicasWithData(k.getKey(), r.getVersion(), r.getReplicaDcsWithDataList());
      }
    }
    if (m.expectsReply()) {
      m.reply(ReplicateAck.getDefaultInstance()); // the data is stored
    }
    host.replicated(r, m.from());
    if (t.complete || t.keys.size() < t.expectedKeys) {
      return;
    }
    t.complete = true;
    int coordinator = host.homeServer(t.coordinatorKey);
    if (coordinator == ep.id()) {
      checkDependencies(t);
      maybePrepareReplicated(t);
    } else {
      coordinators.put(t.version, coordinator);
      long v = t.version;
      toCoordinator(coordinator, Notify.newBuilder().setVersion(v).build(), () -> replicatedTxns.containsKey(v));
    }
  }

  private boolean alreadyCommitted(Replicate r) {
    for (ReplicatedKey k : r.getKeysList()) {
      if (!store.isCommitted(k.getKey(), r.getVersion())) {
        return false;
      }
    }
    return r.getKeysCount() > 0;
  }

  /** Whether the data of every value-bearing key of {@code r} is still here (not collected). */
  private boolean dataStillHere(Replicate r) {
    for (ReplicatedKey k : r.getKeysList()) {
      if (k.getHasValue() && incoming(k.getKey(), r.getVersion()) == null) {
        MultiVersionStore.Version<Row> v = store.find(k.getKey(), r.getVersion());
        if (v == null || v.value() == null) {
          return false;
        }
      }
    }
    return true;
  }

  private void onNotify(int from, Notify n) {
    Long evt = recentCommits.get(n.getVersion());
    if (evt != null) {
      // A repeat from a cohort whose Commit was lost (or is still on its way): commit again.
      host.count("commit_resends");
      ep.send(from, Commit.newBuilder().setTxnId(n.getVersion()).setVersion(n.getVersion()).setEvt(evt).build());
      return;
    }
    ReplicatedTxn t = replicatedTxns.computeIfAbsent(n.getVersion(), ReplicatedTxn::new);
    t.cohorts.add(from);
    maybePrepareReplicated(t);
  }

  /**
   * One-hop dependency checks against the servers holding the dependencies in this replica
   * (K2 §IV: "contacting the local servers responsible for those dependencies"), one message
   * per server with every dependency it holds. The paper leaves the granularity open, and a
   * message per server changes no check: the transaction still prepares only once each
   * dependency is committed at its server. The paper's server replies at once for a committed
   * dependency; here that answer may wait for the rest of its message, which delays nothing,
   * since the coordinator waits for all of them anyway. Eiger's public code, which the paper's
   * systems modify (§VII-A), sends a message per dependency; batching cut K2's local messages
   * per operation (issue 49, docs/performance.md) and applies to every system that checks
   * (K2, PaRiS* and RAD share this engine; Karma's put-after checks were already per server).
   */
  private void checkDependencies(ReplicatedTxn t) {
    if (org.k2bench.core.testing.Mutants.active(org.k2bench.core.testing.Mutants.SKIP_DEPENDENCY_CHECKS)) {
      t.depsPending = 0;
      return;
    }
    t.depsPending = t.deps.size();
    Map<Integer, List<Dep>> remote = new HashMap<>();
    for (Dep d : t.deps) {
      int server = host.homeServer(d.getKey());
      if (server == ep.id()) {
        store.awaitKey(d.getKey(), () -> store.isCommitted(d.getKey(), d.getVersion()), () -> depsSatisfied(t, 1));
      } else {
        remote.computeIfAbsent(server, s -> new ArrayList<>()).add(d);
      }
    }
    remote.forEach((server, deps) -> checkDependencies(t, server, DepCheck.newBuilder().addAllDeps(deps).build()));
  }

  /**
   * Waits until every dependency of {@code check} is committed at {@code server}. A check
   * that comes back without an answer (one is still on its way after the wait timeout, or
   * the message was lost) is asked again whole: a dependency is never assumed. The wait
   * timeout and the asking again are this implementation's (docs/how-it-works.md), not the
   * paper's. Any other error (a check the server refused) is asked again after a pause,
   * with a warning: it is a bug, and asking at once would spin.
   */
  private void checkDependencies(ReplicatedTxn t, int server, DepCheck check) {
    ep.call(server, check, DepOk.class).orTimeout(2 * waitTimeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS)
        .whenCompleteAsync((ok, err) -> {
          if (err != null) {
            host.count("dep_check_retries");
            Throwable cause = err instanceof java.util.concurrent.CompletionException ? err.getCause() : err;
            if (cause instanceof org.k2bench.core.transport.RemoteException
                && String.valueOf(cause.getMessage()).contains(NOT_YET)) {
              checkDependencies(t, server, check); // "not yet": ask again at once, nothing is lost
            } else if (cause instanceof org.k2bench.core.transport.RemoteException) {
              host.count("dep_checks_refused");
              LOG.warn("server {}: server {} refused a dependency check: {}", ep.id(), server, cause.getMessage());
              host.later(Math.min(1_000, waitTimeoutMs), () -> checkDependencies(t, server, check));
            } else {
              host.later(Math.min(1_000, waitTimeoutMs), () -> checkDependencies(t, server, check)); // lost
            }
            return;
          }
          depsSatisfied(t, check.getDepsCount());
        }, thread);
  }

  private void depsSatisfied(ReplicatedTxn t, int n) {
    t.depsPending -= n;
    maybePrepareReplicated(t);
  }

  /** Answers once every dependency of {@code d} is committed here, or fails at the wait timeout. */
  private void onDepCheck(Incoming m, DepCheck d) {
    if (d.getDepsCount() == 0) {
      throw new MalformedMessageException("a dependency check names no dependency");
    }
    int[] left = {d.getDepsCount()};
    boolean[] failed = {false};
    long deadline = System.currentTimeMillis() + waitTimeoutMs;
    for (Dep dep : d.getDepsList()) {
      checkHome(dep.getKey());
    }
    for (Dep dep : d.getDepsList()) {
      boolean atOnce = store.awaitKey(dep.getKey(), () -> store.isCommitted(dep.getKey(), dep.getVersion()), () -> {
        if (--left[0] == 0 && !failed[0]) {
          m.reply(DepOk.getDefaultInstance());
        }
      }, deadline, () -> {
        if (!failed[0]) {
          failed[0] = true;
          m.replyError("dependency " + dep.getKey() + " v" + LamportClock.format(dep.getVersion()) + " " + NOT_YET);
        }
      });
      if (!atOnce) {
        host.count("dep_check_waits"); // before any reply: a dependency that waits answers later
      }
    }
  }

  /**
   * Coordinator: with its own sub-request complete, every cohort notified and every
   * dependency committed in this replica, run two-phase commit and assign the EVT.
   */
  private void maybePrepareReplicated(ReplicatedTxn t) {
    if (!t.complete || t.preparing || t.depsPending != 0
        || t.cohorts.size() < t.numParticipants - 1) {
      return;
    }
    t.preparing = true;
    long prepareTs = clock.nextTimestamp();
    for (String key : t.keys.keySet()) {
      store.prepare(key, t.version, prepareTs);
    }
    prepareCohorts(t);
  }

  /**
   * Asks every cohort to prepare and commits once all said yes. A round that does not
   * complete within the wait timeout (a cohort cut off, a message lost) is asked again:
   * preparing is idempotent, and the transaction's keys stay pending here until it commits.
   */
  private void prepareCohorts(ReplicatedTxn t) {
    List<CompletableFuture<Prepared>> yes = new ArrayList<>();
    for (int cohort : t.cohorts) {
      yes.add(ep.call(cohort, Prepare.newBuilder().setTxnId(t.version).build(), Prepared.class)
          .orTimeout(waitTimeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS));
    }
    CompletableFuture.allOf(yes.toArray(CompletableFuture[]::new)).whenCompleteAsync((r, err) -> {
      if (t.committed) {
        return;
      }
      if (err != null) {
        host.count("prepare_retries");
        if (++t.prepareRounds % 10 == 0) {
          LOG.warn("server {}: replicated v{} still not prepared by every cohort after {} rounds: {}", ep.id(),
              LamportClock.format(t.version), t.prepareRounds, err.toString());
        }
        host.later(Math.min(1_000, waitTimeoutMs), () -> prepareCohorts(t));
        return;
      }
      t.committed = true;
      long evt = clock.nextTimestamp();
      replicatedTxns.remove(t.version);
      commitReplicated(t, evt);
      Commit commit = Commit.newBuilder().setTxnId(t.version).setVersion(t.version).setEvt(evt).build();
      for (int cohort : t.cohorts) {
        ep.send(cohort, commit);
      }
      committedAsCoordinator(t.version, evt);
    }, thread);
  }

  /** Cohort of a replicated transaction: mark its keys pending and say yes. */
  private void onPrepare(Incoming m, Prepare p) {
    ReplicatedTxn t = replicatedTxns.get(p.getTxnId());
    if (t == null && recentReplicatedCommits.containsKey(p.getTxnId())) {
      // A repeated Prepare of a transaction already committed here (the coordinator asked
      // again before our first yes reached it): still yes, with no effect.
      m.reply(Prepared.newBuilder().setTxnId(p.getTxnId()).setPrepareTs(clock.now()).build());
      return;
    }
    if (t == null) {
      throw new MalformedMessageException("prepare for unknown replicated transaction " + p.getTxnId());
    }
    long prepareTs = clock.nextTimestamp();
    for (String key : t.keys.keySet()) {
      store.prepare(key, t.version, prepareTs);
    }
    m.reply(Prepared.newBuilder().setTxnId(t.version).setPrepareTs(prepareTs).build());
  }

  private void commitReplicated(ReplicatedTxn t, long evt) {
    host.count("replicated_wots");
    recentReplicatedCommits.put(t.version, Boolean.TRUE);
    recordReplicationLag(t.originDc, t.originCommitMs);
    coordinators.remove(t.version);
    for (ReplicatedKey k : t.keys.values()) {
      Row value = k.getHasValue() ? incomingWrites.remove(new VKey(k.getKey(), t.version)) : null;
      host.apply(k.getKey(), t.version, t.version, evt, value, Host.REPLICATED);
    }
  }

  // =================================================================== status checks (Eiger)

  private void committedAsCoordinator(long txnId, long evt) {
    recentCommits.put(txnId, evt);
    List<StatusWaiter> waiting = statusWaiters.remove(txnId);
    if (waiting != null) {
      for (StatusWaiter w : waiting) {
        w.m().reply(StatusReply.newBuilder().setEvt(evt).build());
      }
    }
  }

  /**
   * Coordinator: answers once the transaction has committed (it may not have started
   * yet); a check still unanswered after the wait timeout is answered with an error.
   */
  private void onCheckStatus(Incoming m, CheckStatus c) {
    Long evt = recentCommits.get(c.getTxnId());
    if (evt != null) {
      m.reply(StatusReply.newBuilder().setEvt(evt).build());
    } else {
      statusWaiters.computeIfAbsent(c.getTxnId(), k -> new ArrayList<>())
          .add(new StatusWaiter(m, System.currentTimeMillis() + waitTimeoutMs));
    }
  }

  /** Gives up status checks past their deadline (the server's periodic tick). */
  public void expire(long nowMs) {
    if (statusWaiters.isEmpty()) {
      return;
    }
    for (java.util.Iterator<Map.Entry<Long, List<StatusWaiter>>> it = statusWaiters.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<Long, List<StatusWaiter>> e = it.next();
      e.getValue().removeIf(w -> {
        if (w.deadlineMs() > nowMs) {
          return false;
        }
        host.count("status_checks_expired");
        w.m().replyError("transaction " + e.getKey() + " has not committed at its coordinator");
        return true;
      });
      if (e.getValue().isEmpty()) {
        it.remove();
      }
    }
  }

  /**
   * Whether committing a transaction pending here needs a message from another
   * datacenter: its coordinator is elsewhere, or some participant is.
   */
  private boolean spansDatacenters(long txn) {
    ClientTxn c = clientTxns.get(txn);
    if (c != null && c.sub != null) {
      if (topology.dcOfServer(c.sub.getCoordinator()) != ep.dc()) {
        return true;
      }
      for (int p : c.sub.getParticipantsList()) {
        if (topology.dcOfServer(p) != ep.dc()) {
          return true;
        }
      }
      return false;
    }
    ReplicatedTxn r = replicatedTxns.get(txn);
    if (r != null) {
      Integer coordinator = coordinators.get(txn);
      if (coordinator != null && topology.dcOfServer(coordinator) != ep.dc()) {
        return true;
      }
      for (int p : r.participants) {
        if (topology.dcOfServer(p) != ep.dc()) {
          return true;
        }
      }
      for (int p : r.cohorts) {
        if (topology.dcOfServer(p) != ep.dc()) {
          return true;
        }
      }
      return false;
    }
    Integer coordinator = coordinators.get(txn);
    return coordinator != null && topology.dcOfServer(coordinator) != ep.dc();
  }

  /**
   * Resolves every transaction pending on {@code key} that may commit at or below
   * {@code ts} (Eiger's read at an effective time): asks each one's coordinator for its
   * status, then waits until this server has applied the commit. Calls {@code then} on
   * the server thread with whether the wait was a wide-area one (a status check to a
   * coordinator in another datacenter, or a wait for a transaction whose commit needs a
   * message from another datacenter: a further wide-area round trip); or {@code failed}
   * if that has not happened by {@code deadlineMs} (a coordinator that died or is cut
   * off: the read fails rather than waiting forever, and nothing stays behind).
   */
  public void resolvePendingBelow(String key, long ts, long deadlineMs, Consumer<Boolean> then,
      Consumer<String> failed) {
    List<CompletableFuture<StatusReply>> checks = new ArrayList<>();
    boolean wide = false;
    List<Long> pending = store.pendingBelow(key, ts);
    for (long txn : pending) {
      wide |= spansDatacenters(txn);
      Integer coordinator = coordinators.get(txn);
      if (coordinator == null || coordinator == ep.id()) {
        continue; // this server decides it; only waiting is needed
      }
      host.count("status_checks");
      long timeout = Math.max(1, deadlineMs - System.currentTimeMillis());
      boolean replicated = replicatedTxns.containsKey(txn);
      checks.add(ep.call(coordinator, CheckStatus.newBuilder().setTxnId(txn).build(), StatusReply.class)
          .orTimeout(timeout, java.util.concurrent.TimeUnit.MILLISECONDS)
          .whenCompleteAsync((reply, err) -> {
            if (reply != null) {
              // Committed at its coordinator: commit it here too (as Eiger does with the
              // status reply), rather than wait for a Commit message that may be slow.
              // A client transaction's version is its EVT; a replicated one's is its id.
              onCommit(Commit.newBuilder().setTxnId(txn).setVersion(replicated ? txn : reply.getEvt())
                  .setEvt(reply.getEvt()).build());
            }
          }, thread));
    }
    boolean wideArea = wide;
    Runnable afterChecks = () -> store.awaitKey(key, () -> !store.hasPendingBelow(key, ts),
        () -> then.accept(wideArea), deadlineMs, () -> {
          host.count("reads_unresolved");
          failed.accept("a write-only transaction pending on '" + key + "' below " + LamportClock.format(ts)
              + " did not resolve in time (its coordinator may be down or cut off)");
        });
    if (checks.isEmpty()) {
      afterChecks.run();
    } else {
      CompletableFuture.allOf(checks.toArray(CompletableFuture[]::new))
          .whenCompleteAsync((r, err) -> afterChecks.run(), thread);
    }
  }

  /** The transactions pending on {@code key} here: {txn id, prepare time} each. */
  public List<long[]> pendingOn(String key) {
    return store.pending(key);
  }

  /** The version of a replicated transaction pending here (its id), or null for a client's. */
  public Long replicatedVersion(long txn) {
    return replicatedTxns.containsKey(txn) && !clientTxns.containsKey(txn) ? txn : null;
  }

  /** Counters the engine keeps (for stats). */
  public Map<String, Long> gauges() {
    return Map.of("incoming_writes", (long) incomingWrites.size(),
        "pending_client_txns", (long) clientTxns.size(),
        "pending_replicated_txns", (long) replicatedTxns.size());
  }
}
