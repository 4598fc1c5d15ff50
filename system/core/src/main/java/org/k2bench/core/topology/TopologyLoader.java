package org.k2bench.core.topology;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a topology file (YAML or JSON). Example, with the paper's six datacenters:
 *
 * <pre>
 * datacenters: [VA, CA, SP, LDN, TYO, SG]
 * rtt_ms:              # each pair once or twice (then equal); fractional ms are kept
 *   VA: {CA: 60, SP: 146, LDN: 76, TYO: 162, SG: 243}
 *   ...
 * servers_per_dc: 4
 * replication_factor: 2
 * placement: groups    # optional: replica groups by index modulo f (default, K2 paper), or
 * partitions: 12       #   placement: partitions with N partitions on f datacenters each
 *                      #   (PaRiS paper); servers_per_dc must then be N x f / D
 * rings: [[VA, CA, LDN], [TYO, SG], [SP]]  # placement: rings (Karma paper): each ring one
 *                      #   full replica over its datacenters; f = the number of rings
 * placement_table: ba.csv  # placement: table: each key's f replicas from a file
 *                      #   (PlacementTable; k2bench place writes one); relative to this file
 * intra_dc_delay_ms: 0 # optional
 * jitter_ms: 0         # optional, added per message without reordering
 * rtt_scale: 1.0       # optional, multiplies every RTT
 * wan_emulation: embedded  # optional: the transport delays messages by the matrix (default);
 *                      # none where the network has the latency (real regions, tc/netem)
 * servers:             # either one address per server ...
 *   VA: ["10.0.0.1:7000", ...]
 * base_port: 7000      # ... or consecutive ports on one host (default 127.0.0.1)
 * host: 127.0.0.1
 * </pre>
 */
public final class TopologyLoader {
  private static final Set<String> FIELDS = Set.of(
      "datacenters", "rtt_ms", "servers_per_dc", "replication_factor", "intra_dc_delay_ms",
      "jitter_ms", "rtt_scale", "servers", "base_port", "host", "wan_emulation", "placement", "partitions",
      "rings", "placement_table");

  private TopologyLoader() {}

  public static Topology load(Path file) {
    String text;
    try {
      text = Files.readString(file);
    } catch (NoSuchFileException e) {
      throw new ConfigException(file.toString(), "no such file");
    } catch (IOException e) {
      throw new ConfigException(file.toString(), "cannot read: " + e.getMessage());
    }
    try {
      return parse(text, file.toAbsolutePath().getParent());
    } catch (ConfigException e) {
      throw new ConfigException(file + ": " + e.field(), e.getMessage().substring(e.field().length() + 2));
    }
  }

  public static Topology parse(String yaml) {
    return parse(yaml, null);
  }

  /** @param baseDir where a relative {@code placement_table} path starts (null: the working directory) */
  public static Topology parse(String yaml, Path baseDir) {
    JsonNode root;
    try {
      root = new ObjectMapper(new YAMLFactory()).readTree(yaml);
    } catch (JsonProcessingException e) {
      String where = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr();
      throw new ConfigException("(file)", "not valid YAML" + where + ": " + e.getOriginalMessage());
    }
    if (root == null || root.isMissingNode()) {
      throw new ConfigException("(file)", "empty; see system/core TopologyLoader for the format");
    }
    return fromNode(new ConfigNode("", root), baseDir);
  }

  public static Topology fromNode(ConfigNode root) {
    return fromNode(root, null);
  }

  public static Topology fromNode(ConfigNode root, Path baseDir) {
    root.requireOnly(FIELDS);
    List<String> dcs = new ArrayList<>();
    for (ConfigNode n : root.get("datacenters").elements()) {
      dcs.add(n.asText());
    }
    if (dcs.isEmpty()) {
      throw new ConfigException("datacenters", "empty; list at least one datacenter name");
    }
    int d = dcs.size();
    double[][] rtt = new double[d][d];
    for (double[] row : rtt) {
      Arrays.fill(row, Double.NaN);
    }
    for (int i = 0; i < d; i++) {
      rtt[i][i] = 0;
    }
    boolean[][] given = new boolean[d][d];
    for (Map.Entry<String, ConfigNode> row : root.get("rtt_ms").entries()) {
      int a = index(dcs, row.getValue().path(), row.getKey());
      for (Map.Entry<String, ConfigNode> cell : row.getValue().entries()) {
        int b = index(dcs, cell.getValue().path(), cell.getKey());
        double v = cell.getValue().asDouble();
        if (a == b && v != 0) {
          throw new ConfigException(cell.getValue().path(), "a datacenter's RTT to itself must be 0");
        }
        if (given[b][a] && rtt[b][a] != v) {
          throw new ConfigException(cell.getValue().path(), "asymmetric: " + v + " but rtt_ms."
              + dcs.get(b) + "." + dcs.get(a) + " is " + rtt[b][a] + "; the matrix must be symmetric");
        }
        rtt[a][b] = v;
        given[a][b] = true;
        if (!given[b][a]) {
          rtt[b][a] = v;
        }
      }
    }
    for (int a = 0; a < d; a++) {
      for (int b = a + 1; b < d; b++) {
        if (!given[a][b] && !given[b][a]) {
          throw new ConfigException("rtt_ms." + dcs.get(a) + "." + dcs.get(b),
              "missing; give the round-trip time between " + dcs.get(a) + " and " + dcs.get(b) + " in ms");
        }
      }
    }
    double scale = root.getDouble("rtt_scale", 1.0);
    if (!(scale > 0)) {
      throw new ConfigException("rtt_scale", "must be > 0, got " + scale);
    }
    for (double[] row : rtt) {
      for (int i = 0; i < d; i++) {
        row[i] *= scale;
      }
    }
    int f = root.get("replication_factor").asInt();
    Placement.Scheme placement = Placement.Scheme.parse("placement", root.getText("placement", "groups"));
    int partitions = 0;
    if (root.has("partitions")) {
      partitions = root.get("partitions").asInt();
    } else if (placement == Placement.Scheme.PARTITIONS) {
      throw new ConfigException("partitions", "missing; placement: partitions needs the number of partitions");
    }
    int[][] rings = null;
    if (root.has("rings")) {
      List<int[]> list = new ArrayList<>();
      for (ConfigNode ring : root.get("rings").elements()) {
        List<ConfigNode> members = ring.elements();
        int[] r = new int[members.size()];
        for (int i = 0; i < r.length; i++) {
          r[i] = index(dcs, members.get(i).path(), members.get(i).asText());
        }
        list.add(r);
      }
      rings = list.toArray(int[][]::new);
    }
    int s = root.get("servers_per_dc").asInt();
    List<List<HostPort>> servers;
    if (root.has("servers")) {
      if (root.has("base_port")) {
        throw new ConfigException("base_port", "give either servers or base_port, not both");
      }
      servers = new ArrayList<>();
      for (int i = 0; i < d; i++) {
        servers.add(null);
      }
      for (Map.Entry<String, ConfigNode> e : root.get("servers").entries()) {
        int a = index(dcs, e.getValue().path(), e.getKey());
        List<HostPort> list = new ArrayList<>();
        for (ConfigNode n : e.getValue().elements()) {
          list.add(HostPort.parse(n.path(), n.asText()));
        }
        servers.set(a, list);
      }
      for (int a = 0; a < d; a++) {
        if (servers.get(a) == null) {
          throw new ConfigException("servers." + dcs.get(a), "missing; list " + s + " host:port addresses");
        }
      }
    } else if (root.has("base_port")) {
      int base = root.get("base_port").asInt();
      if (base < 1 || base + d * Math.max(s, 1) - 1 > 65535) {
        throw new ConfigException("base_port", base + " leaves no room for " + d * s + " ports below 65536");
      }
      servers = Topology.localAddresses(d, Math.max(s, 0), root.getText("host", "127.0.0.1"), base);
    } else {
      throw new ConfigException("servers", "missing; give servers (per datacenter host:port lists) or base_port");
    }
    String emulation = root.getText("wan_emulation", "embedded");
    if (!emulation.equals("embedded") && !emulation.equals("none")) {
      throw new ConfigException("wan_emulation", "must be embedded or none, got '" + emulation + "'");
    }
    PlacementTable table = null;
    if (root.has("placement_table")) {
      if (placement != Placement.Scheme.TABLE) {
        throw new ConfigException("placement_table", "applies only to placement: table; remove it or set placement: "
            + "table");
      }
      Path p = Path.of(root.getText("placement_table", ""));
      table = PlacementTable.read(baseDir == null || p.isAbsolute() ? p : baseDir.resolve(p), dcs, f);
    }
    return new Topology(dcs, rtt, s, f, servers,
        root.getDouble("intra_dc_delay_ms", 0), root.getDouble("jitter_ms", 0), emulation.equals("embedded"),
        placement, partitions, rings, table);
  }

  private static int index(List<String> dcs, String field, String name) {
    int i = dcs.indexOf(name);
    if (i < 0) {
      throw new ConfigException(field, "unknown datacenter '" + name + "'; datacenters are " + dcs);
    }
    return i;
  }

  /** The paper's six datacenters and RTT matrix (K2 Fig. 6), with local ports. */
  public static Topology paperDefault(int serversPerDc, int replicationFactor, int basePort) {
    List<String> dcs = List.of("VA", "CA", "SP", "LDN", "TYO", "SG");
    double[][] rtt = {
      {0, 60, 146, 76, 162, 243},
      {60, 0, 194, 136, 110, 178},
      {146, 194, 0, 214, 269, 333},
      {76, 136, 214, 0, 233, 163},
      {162, 110, 269, 233, 0, 68},
      {243, 178, 333, 163, 68, 0},
    };
    return new Topology(dcs, rtt, serversPerDc, replicationFactor,
        Topology.localAddresses(6, serversPerDc, "127.0.0.1", basePort), 0, 0);
  }
}
