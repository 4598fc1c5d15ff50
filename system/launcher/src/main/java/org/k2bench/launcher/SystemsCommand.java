package org.k2bench.launcher;

import java.util.concurrent.Callable;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(name = "systems", mixinStandardHelpOptions = true, description = "Lists the bundled systems.")
final class SystemsCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    for (StoreSystem s : Systems.available().values()) {
      spec.commandLine().getOut().printf("%-12s %s%n", s.name(), s.description());
    }
    return 0;
  }
}
