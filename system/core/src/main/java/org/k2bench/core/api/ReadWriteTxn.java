package org.k2bench.core.api;

import java.util.Collection;
import java.util.Map;
import org.k2bench.core.data.Row;

/**
 * An interactive read-write transaction of one session ({@link KvClient#begin()}): reads at
 * the snapshot the system gave it at start, writes buffered until {@link #commit()}, which
 * makes all of them visible atomically with one version. The workload reads first and then
 * writes, so a read never needs the transaction's own writes; a system whose protocol
 * returns them (the PaRiS paper's write set) may. Not thread-safe; one at a time per
 * session.
 */
public interface ReadWriteTxn {
  /** Reads {@code keys} at the transaction's snapshot, in parallel where the system can. */
  ReadResult read(Collection<String> keys);

  /** Buffers writes; nothing is visible to anyone else before {@link #commit()}. */
  void write(Map<String, Row> writes);

  /**
   * Commits: every buffered write gets the returned version, and the session's later
   * operations see them. A transaction with no write commits at once.
   */
  WriteResult commit();
}
