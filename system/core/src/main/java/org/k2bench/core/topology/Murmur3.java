package org.k2bench.core.topology;

import java.nio.charset.StandardCharsets;

/** The hash every placement uses: fixed, so a key lands in the same place in every run, JVM and system. */
final class Murmur3 {
  private Murmur3() {}

  /** MurmurHash3 x86_32 of the key's UTF-8 bytes; fixed so placement is stable across runs and JVMs. */
  static int hash32(String key, int seed) {
    byte[] data = key.getBytes(StandardCharsets.UTF_8);
    int h = seed;
    int n = data.length / 4;
    for (int i = 0; i < n; i++) {
      int k = (data[4 * i] & 0xff) | (data[4 * i + 1] & 0xff) << 8
          | (data[4 * i + 2] & 0xff) << 16 | (data[4 * i + 3] & 0xff) << 24;
      k *= 0xcc9e2d51;
      k = Integer.rotateLeft(k, 15);
      k *= 0x1b873593;
      h ^= k;
      h = Integer.rotateLeft(h, 13);
      h = h * 5 + 0xe6546b64;
    }
    int tail = n * 4;
    int rest = data.length & 3;
    if (rest > 0) {
      int k = 0;
      for (int i = rest - 1; i >= 0; i--) {
        k = (k << 8) | (data[tail + i] & 0xff);
      }
      k *= 0xcc9e2d51;
      k = Integer.rotateLeft(k, 15);
      k *= 0x1b873593;
      h ^= k;
    }
    h ^= data.length;
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    h ^= h >>> 16;
    return h;
  }
}
