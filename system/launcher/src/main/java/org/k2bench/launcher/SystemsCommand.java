package org.k2bench.launcher;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;
import org.k2bench.core.testing.Mutant;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "systems", mixinStandardHelpOptions = true, description = "Lists the bundled systems.")
final class SystemsCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--json", description = "One JSON object per system, with its claims (for the orchestrator).")
  boolean json;

  @Override
  public Integer call() throws Exception {
    var out = spec.commandLine().getOut();
    if (json) {
      List<Map<String, Object>> all = new ArrayList<>();
      for (StoreSystem s : inOrder()) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", s.name());
        m.put("description", s.description());
        m.put("max_wan_rounds", s.maxWanRounds() == Integer.MAX_VALUE ? null : s.maxWanRounds());
        m.put("not_own", new java.util.TreeMap<>(s.notOwnMeasurements()));
        List<Map<String, Object>> options = new ArrayList<>();
        for (org.k2bench.core.api.SystemOption o : s.options()) {
          Map<String, Object> om = new LinkedHashMap<>();
          om.put("name", o.name());
          om.put("type", o.type().jsonName());
          om.put("default", o.show(o.defaultValue()));
          if (o.type() == org.k2bench.core.api.SystemOption.Type.CHOICE) {
            om.put("choices", o.choices());
          } else if (o.type() != org.k2bench.core.api.SystemOption.Type.BOOLEAN) {
            om.put("min", o.show(o.min()));
            om.put("max", o.show(o.max()));
          }
          om.put("description", o.description());
          options.add(om);
        }
        m.put("options", options);
        m.put("read_write_transactions", s.readWriteTransactions());
        m.put("write_only_transactions", s.writeOnlyTransactions());
        m.put("message_loss", s.toleratesMessageLoss());
        m.put("placements", s.placements().stream().map(org.k2bench.core.topology.Placement.Scheme::fileName)
            .sorted().toList());
        m.put("label", s.label());
        m.put("colour", s.colour());
        m.put("order", s.order());
        m.put("paper", s.paper());
        m.put("run_by_default", s.runByDefault());
        m.put("dc_cache", s.dcCache());
        m.put("client_second_round", s.clientSecondRound());
        m.put("causal", s.causal());
        m.put("thread_categories", new java.util.TreeMap<>(s.threadCategories()));
        List<Map<String, Object>> mutants = new ArrayList<>();
        for (Mutant mu : s.mutants().stream().sorted(Comparator.comparing(Mutant::name)).toList()) {
          Map<String, Object> mm = new LinkedHashMap<>();
          mm.put("name", mu.name());
          mm.put("description", mu.description());
          mutants.add(mm);
        }
        m.put("mutants", mutants);
        all.add(m);
      }
      // ASCII only, the rest escaped: descriptions hold Greek letters (Δ_G), and Java 17 writes
      // stdout in the locale's charset, which under LANG=C would turn them into '?'
      out.println(JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build().writeValueAsString(all));
    } else {
      for (StoreSystem s : inOrder()) {
        out.printf("%-12s %s%n", s.name(), s.description());
      }
    }
    out.flush();
    return 0;
  }

  /** The systems as tables and figures show them: by {@link StoreSystem#order()}, then name. */
  static List<StoreSystem> inOrder() {
    return Systems.available().values().stream()
        .sorted(Comparator.comparingInt(StoreSystem::order).thenComparing(StoreSystem::name)).toList();
  }
}
