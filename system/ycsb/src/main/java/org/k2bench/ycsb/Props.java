package org.k2bench.ycsb;

import java.util.Properties;
import site.ycsb.WorkloadException;

/** The workload's numeric properties, each refused with its name when out of range. */
final class Props {
  private Props() {}

  static long longProp(Properties p, String name, long dflt, long min) throws WorkloadException {
    String v = p.getProperty(name);
    try {
      long x = v == null ? dflt : Long.parseLong(v.trim());
      if (x < min) {
        throw new WorkloadException(name + ": must be at least " + min + ", got " + x);
      }
      return x;
    } catch (NumberFormatException e) {
      throw new WorkloadException(name + ": '" + v + "' is not an integer");
    }
  }

  static double doubleProp(Properties p, String name, double dflt) throws WorkloadException {
    String v = p.getProperty(name);
    try {
      double x = v == null ? dflt : Double.parseDouble(v.trim());
      if (!(x >= 0)) {
        throw new WorkloadException(name + ": must be >= 0, got " + x);
      }
      return x;
    } catch (NumberFormatException e) {
      throw new WorkloadException(name + ": '" + v + "' is not a number");
    }
  }
}
