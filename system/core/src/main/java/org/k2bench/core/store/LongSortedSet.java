package org.k2bench.core.store;

import java.util.Arrays;

/**
 * A set of longs kept as a sorted primitive array: 8 bytes per element, and appending
 * in increasing order (the common case for versions of one key) costs no shifting. Not
 * thread-safe.
 */
final class LongSortedSet {
  private long[] a = new long[2];
  private int n;

  void add(long x) {
    if (n > 0 && a[n - 1] < x) {
      grow();
      a[n++] = x;
      return;
    }
    int i = Arrays.binarySearch(a, 0, n, x);
    if (i >= 0) {
      return;
    }
    int at = -i - 1;
    grow();
    System.arraycopy(a, at, a, at + 1, n - at);
    a[at] = x;
    n++;
  }

  boolean contains(long x) {
    return Arrays.binarySearch(a, 0, n, x) >= 0;
  }

  /** The largest element; only when not empty. */
  long max() {
    return a[n - 1];
  }

  int size() {
    return n;
  }

  private void grow() {
    if (n == a.length) {
      a = Arrays.copyOf(a, a.length * 2);
    }
  }
}
