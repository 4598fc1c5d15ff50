package org.k2bench.core.transport;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Which processes read the same {@link System#nanoTime()} clock. On Linux, HotSpot reads
 * CLOCK_MONOTONIC, one clock per booted kernel, shared by every process and network
 * namespace on the machine: the kernel's boot id names it. Where it cannot be read, the
 * domain is this process alone. Envelopes carry the sender's domain so the receiver knows
 * whether the send time they carry can be compared with its own clock.
 */
final class ClockDomain {
  static final long ID = load();

  private ClockDomain() {}

  private static long load() {
    try {
      String bootId = Files.readString(Path.of("/proc/sys/kernel/random/boot_id"), StandardCharsets.US_ASCII).strip();
      if (!bootId.isEmpty()) {
        long h = 0xcbf29ce484222325L; // FNV-1a: stable, and collisions between two kernels are negligible
        for (byte b : bootId.getBytes(StandardCharsets.US_ASCII)) {
          h = (h ^ b) * 0x100000001b3L;
        }
        return h;
      }
    } catch (java.io.IOException | RuntimeException e) {
      // not Linux, or /proc is hidden: fall through to a process-private domain
    }
    return ThreadLocalRandom.current().nextLong() | 1; // never 0, the field's default
  }
}
