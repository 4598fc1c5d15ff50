package org.k2bench.launcher;

import java.io.PrintWriter;
import org.k2bench.core.topology.ConfigException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code k2bench-server}: runs the bundled systems' servers and the transport benchmarks. */
@Command(name = "k2bench-server", mixinStandardHelpOptions = true, version = "k2bench 0.1.0",
    description = "Starts servers of a bundled system (k2, ...) from a trial's spec.json, and "
        + "measures the emulated WAN.",
    subcommands = {ServeCommand.class, SystemsCommand.class, PingCommand.class,
        TopologyCommand.class, EmulationBench.class, EchoBench.class})
public final class Main implements Runnable {
  /** Exit code for bad input (config, flags): the message names the field. */
  static final int BAD_INPUT = 2;

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }

  public static void main(String[] args) {
    System.exit(execute(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
  }

  /** Runs the CLI; bad input becomes one line on {@code err} and exit code 2. */
  public static int execute(String[] args, PrintWriter out, PrintWriter err) {
    CommandLine cl = new CommandLine(new Main());
    cl.setOut(out);
    cl.setErr(err);
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      if (e instanceof ConfigException) {
        err.println("k2bench-server: " + e.getMessage());
        return BAD_INPUT;
      }
      throw e;
    });
    cl.setParameterExceptionHandler((e, a) -> {
      err.println("k2bench-server: " + e.getMessage() + " (see --help)");
      return BAD_INPUT;
    });
    return cl.execute(args);
  }
}
