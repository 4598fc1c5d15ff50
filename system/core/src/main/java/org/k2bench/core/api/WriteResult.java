package org.k2bench.core.api;

/**
 * The outcome of a write or write-only transaction.
 *
 * @param version the version assigned to every key written
 * @param wanRounds wide-area round trips on the client's critical path
 */
public record WriteResult(long version, int wanRounds) {}
