package org.k2bench.launcher;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * Validates a topology file with the same loader the servers use and prints it resolved
 * (scale applied, addresses listed) as JSON. The orchestrator calls it before starting
 * anything, so the Java loader is the one definition of a valid topology. With
 * {@code --table-out}, it also writes the placement of the keys user0..user(N-1) as a
 * placement table (the format {@code placement: table} reads): how analysis asks what any
 * placement, hash-based ones included, does with each key.
 */
@Command(name = "topology", mixinStandardHelpOptions = true,
    description = "Checks a topology file and prints it resolved, as JSON.")
final class TopologyCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Parameters(paramLabel = "FILE")
  Path file;

  @Option(names = "--table-out", paramLabel = "CSV", description = "write the keys' placement as a placement table")
  Path tableOut;

  @Option(names = "--keys", paramLabel = "N", description = "with --table-out: the keys user0..user(N-1)")
  long keys = -1;

  @Override
  public Integer call() throws Exception {
    Topology t = TopologyLoader.load(file);
    if (tableOut != null) {
      writeTable(t, tableOut);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("datacenters", t.dcs());
    out.put("rtt_ms", t.rttMatrixMs());
    out.put("servers_per_dc", t.serversPerDc());
    out.put("replication_factor", t.replicationFactor());
    Placement placement = Placement.of(t);
    out.put("placement", t.placementScheme().fileName());
    out.put("partitions", placement.numPartitions());
    if (t.rings() != null) {
      out.put("rings", java.util.Arrays.stream(t.rings())
          .map(r -> java.util.Arrays.stream(r).mapToObj(t::dcName).toList()).toList());
    }
    if (t.placementTable() != null) {
      org.k2bench.core.topology.PlacementTable table = t.placementTable();
      Map<String, Object> tab = new LinkedHashMap<>();
      tab.put("file", table.file().toAbsolutePath().toString());
      tab.put("sha256", table.sha256());
      tab.put("keys", table.keys());
      tab.put("replica_sets", table.numSets());
      long[] perDc = table.keysPerDc(t.numDcs());
      Map<String, Long> keysPerDc = new LinkedHashMap<>();
      for (int dc = 0; dc < t.numDcs(); dc++) {
        keysPerDc.put(t.dcName(dc), perDc[dc]);
      }
      tab.put("keys_per_dc", keysPerDc);
      out.put("placement_table", tab);
    }
    // Where loaders run: each datacenter that holds the first replica of some partition.
    out.put("first_replica_dcs", java.util.Arrays.stream(placement.firstReplicaDcs()).mapToObj(t::dcName).toList());
    out.put("intra_dc_delay_ms", t.intraDcDelayMs());
    out.put("jitter_ms", t.jitterMs());
    out.put("wan_emulation", t.wanEmulation() ? "embedded" : "none");
    Map<String, List<String>> servers = new LinkedHashMap<>();
    for (int dc = 0; dc < t.numDcs(); dc++) {
      List<String> addrs = new ArrayList<>();
      for (int s = 0; s < t.serversPerDc(); s++) {
        addrs.add(t.address(t.serverId(dc, s)).toString());
      }
      servers.put(t.dcName(dc), addrs);
    }
    out.put("servers", servers);
    spec.commandLine().getOut().println(
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(out));
    return 0;
  }

  /** Rows of consecutive ids with the same replicas merged into ranges; written whole, then renamed. */
  private void writeTable(Topology t, Path out) throws java.io.IOException {
    if (keys < 1 || keys > Integer.MAX_VALUE) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(),
          "--keys: give the number of keys (1 .. 2^31-1) with --table-out, got " + keys);
    }
    Placement p = Placement.of(t);
    Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
    try (java.io.BufferedWriter w = java.nio.file.Files.newBufferedWriter(tmp)) {
      w.write("# the " + t.placementScheme().fileName() + " placement of " + file.getFileName() + " (k2bench topology "
          + "--table-out)\nids,replicas\n");
      String prev = null;
      long first = 0;
      for (long id = 0; id <= keys; id++) {
        String dcs = null;
        if (id < keys) {
          StringBuilder b = new StringBuilder();
          for (int dc : p.replicaDcs("user" + id)) {
            b.append(b.length() == 0 ? "" : ";").append(t.dcName(dc));
          }
          dcs = b.toString();
        }
        if (prev != null && !prev.equals(dcs)) {
          w.write((first == id - 1 ? String.valueOf(first) : first + "-" + (id - 1)) + "," + prev + "\n");
          first = id;
        }
        if (prev == null) {
          first = id;
        }
        prev = dcs;
      }
    }
    java.nio.file.Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }
}
