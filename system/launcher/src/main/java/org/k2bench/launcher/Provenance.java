package org.k2bench.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Where a result came from: the git commit of the working directory and whether it was dirty. */
final class Provenance {
  private Provenance() {}

  static Map<String, Object> git() {
    Map<String, Object> m = new LinkedHashMap<>();
    String commit = run("git", "rev-parse", "HEAD");
    String status = run("git", "status", "--porcelain", "--untracked-files=no");
    m.put("git_commit", commit == null ? "unknown" : commit.trim());
    m.put("git_dirty", status == null ? null : !status.isBlank());
    return m;
  }

  private static String run(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        return null;
      }
      return out;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }
}
