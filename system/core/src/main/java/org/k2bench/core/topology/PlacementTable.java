package org.k2bench.core.topology;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A placement table ({@code placement: table}, {@code placement_table: FILE}): the replica
 * datacenters of every key, as {@code k2bench place} writes it (or a user by hand). CSV: lines
 * starting with {@code #} are comments; the header is {@code ids,replicas} or
 * {@code ids,replicas,bucket}; each row gives a key id ({@code 42}) or an inclusive range
 * ({@code 100-199}) of the keys {@code user<id>}, their f replica datacenters separated by
 * {@code ;} (the first loads them) and optionally the optimiser's bucket label. The rows cover
 * the ids 0..N-1 exactly once. Immutable; validated on {@link #read}.
 */
public final class PlacementTable {
  /** Key ids below this: the table is an array indexed by id. */
  static final long MAX_KEYS = Integer.MAX_VALUE - 8;

  private final Path file;
  private final String sha256;
  /** [set]: its replica datacenters (indexes), in replica order. */
  private final int[][] sets;
  /** [key id]: its replica set. */
  private final int[] setOfId;

  private PlacementTable(Path file, String sha256, int[][] sets, int[] setOfId) {
    this.file = file;
    this.sha256 = sha256;
    this.sets = sets;
    this.setOfId = setOfId;
  }

  /**
   * Reads and validates a table for a topology's datacenters and replication factor; a
   * {@link ConfigException} on {@code placement_table} naming the file, line and fix otherwise.
   */
  public static PlacementTable read(Path file, List<String> dcs, int f) {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new ConfigException("placement_table", file + ": no such file; write one with k2bench place");
    } catch (IOException e) {
      throw new ConfigException("placement_table", file + ": cannot read: " + e.getMessage());
    }
    Map<String, Integer> setIndex = new LinkedHashMap<>();
    List<int[]> sets = new ArrayList<>();
    List<long[]> rows = new ArrayList<>(); // {first id, last id, set, line}
    boolean header = false;
    int line = 0;
    long covered = 0;
    try (BufferedReader in = new BufferedReader(new java.io.InputStreamReader(
        new java.io.ByteArrayInputStream(bytes), StandardCharsets.UTF_8))) {
      for (String text = in.readLine(); text != null; text = in.readLine()) {
        line++;
        String s = text.strip();
        if (s.isEmpty() || s.startsWith("#")) {
          continue;
        }
        String where = file + ":" + line + ": ";
        if (!header) {
          if (!s.equals("ids,replicas") && !s.equals("ids,replicas,bucket")) {
            throw new ConfigException("placement_table", where + "the header must be 'ids,replicas' or "
                + "'ids,replicas,bucket', got '" + s + "'");
          }
          header = true;
          continue;
        }
        String[] cells = s.split(",", -1);
        if (cells.length < 2 || cells.length > 3) {
          throw new ConfigException("placement_table", where + "a row is 'ids,replicas[,bucket]', got '" + s + "'");
        }
        long[] range = parseIds(where, cells[0].strip());
        String[] names = cells[1].strip().split(";", -1);
        if (names.length != f) {
          throw new ConfigException("placement_table", where + "lists " + names.length + " replica datacenters ("
              + cells[1].strip() + "), the topology's replication_factor is " + f + "; place again with f = " + f);
        }
        int[] set = new int[f];
        for (int i = 0; i < f; i++) {
          int dc = dcs.indexOf(names[i].strip());
          if (dc < 0) {
            throw new ConfigException("placement_table", where + "unknown datacenter '" + names[i].strip()
                + "'; the topology's datacenters are " + dcs);
          }
          for (int j = 0; j < i; j++) {
            if (set[j] == dc) {
              throw new ConfigException("placement_table", where + names[i].strip() + " is listed twice; a key's "
                  + f + " replicas are at " + f + " distinct datacenters");
            }
          }
          set[i] = dc;
        }
        String canonical = Arrays.toString(set);
        Integer index = setIndex.get(canonical);
        if (index == null) {
          index = sets.size();
          setIndex.put(canonical, index);
          sets.add(set);
        }
        rows.add(new long[] {range[0], range[1], index, line});
        covered += range[1] - range[0] + 1;
      }
    } catch (IOException e) {
      throw new ConfigException("placement_table", file + ": cannot read: " + e.getMessage());
    }
    if (!header || rows.isEmpty()) {
      throw new ConfigException("placement_table", file + ": no rows; the header 'ids,replicas' and one row per "
          + "key id or id range are needed");
    }
    rows.sort((a, b) -> Long.compare(a[0], b[0]));
    long next = 0;
    for (long[] r : rows) {
      if (r[0] > next) {
        throw new ConfigException("placement_table", file + ":" + r[3] + ": the ids " + next + ".." + (r[0] - 1)
            + " are in no row; every key id from 0 on needs its replicas");
      }
      if (r[0] < next) {
        throw new ConfigException("placement_table", file + ":" + r[3] + ": the ids from " + r[0]
            + " overlap an earlier row; each key id is in exactly one row");
      }
      next = r[1] + 1;
    }
    int[] setOfId = new int[(int) covered];
    for (long[] r : rows) {
      Arrays.fill(setOfId, (int) r[0], (int) r[1] + 1, (int) r[2]);
    }
    return new PlacementTable(file, sha256(bytes), sets.toArray(int[][]::new), setOfId);
  }

  private static long[] parseIds(String where, String ids) {
    try {
      int dash = ids.indexOf('-');
      long first = Long.parseLong(dash < 0 ? ids : ids.substring(0, dash));
      long last = dash < 0 ? first : Long.parseLong(ids.substring(dash + 1));
      if (first < 0 || last < first) {
        throw new NumberFormatException();
      }
      if (last >= MAX_KEYS) {
        throw new ConfigException("placement_table", where + "id " + last + " is beyond the largest supported key id "
            + (MAX_KEYS - 1));
      }
      return new long[] {first, last};
    } catch (NumberFormatException e) {
      throw new ConfigException("placement_table", where + "ids must be a key id or a range 'first-last' of "
          + "ids >= 0 (first <= last), got '" + ids + "'");
    }
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  public Path file() {
    return file;
  }

  /** The file's SHA-256 (hex): what the manifest records. */
  public String sha256() {
    return sha256;
  }

  /** Number of keys (ids 0..N-1). */
  public int keys() {
    return setOfId.length;
  }

  /** Number of distinct replica sets. */
  public int numSets() {
    return sets.length;
  }

  /** A replica set's datacenters (a fresh array), in replica order. */
  public int[] set(int index) {
    return sets[index].clone();
  }

  /** The replica set of {@code key} ({@code user<id>}); an {@link IllegalArgumentException} for a key not in the table. */
  public int setOf(String key) {
    long id = -1;
    if (key.startsWith("user") && key.length() > 4 && key.length() <= 14) {
      id = 0;
      for (int i = 4; i < key.length() && id >= 0; i++) {
        char c = key.charAt(i);
        id = c >= '0' && c <= '9' ? id * 10 + (c - '0') : -1;
      }
    }
    if (id < 0 || id >= setOfId.length) {
      throw new IllegalArgumentException("key '" + key + "' is not in the placement table " + file.getFileName()
          + " (it places user0 .. user" + (setOfId.length - 1) + ")");
    }
    return setOfId[(int) id];
  }

  /** How many keys each datacenter holds a replica of (storage per datacenter). */
  public long[] keysPerDc(int numDcs) {
    long[] perSet = new long[sets.length];
    for (int s : setOfId) {
      perSet[s]++;
    }
    long[] out = new long[numDcs];
    for (int s = 0; s < sets.length; s++) {
      for (int dc : sets[s]) {
        out[dc] += perSet[s];
      }
    }
    return out;
  }
}
