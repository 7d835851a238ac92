// nnfuse: an operator-fusion compiler and runtime for ONNX models.
#include <iostream>

#include "ir/error.h"
#include "tools/nnfuse/commands.h"

int main(int argc, char** argv) {
  using namespace nnfuse;
  CLI::App app{"nnfuse: an operator-fusion compiler and runtime for ONNX models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "nnfuse 0.1.0");
  std::map<CLI::App*, cli::Action> actions;
  auto add = [&](cli::Action (*f)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    cli::Action a = f(app);
    actions[app.get_subcommands({})[before]] = a;
  };
  add(cli::add_run);
  add(cli::add_info);
  add(cli::add_bench);
  add(cli::add_profile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : cli::kExitUsage;
  }
  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
    return cli::kExitUsage;
  } catch (const Error& e) {
    std::cerr << "nnfuse: error: " << e.what() << "\n";
    return e.kind() == ErrorKind::kUnsupported ? cli::kExitUnsupported : cli::kExitError;
  } catch (const std::bad_alloc&) {
    std::cerr << "nnfuse: error: out of memory\n";
    return cli::kExitError;
  } catch (const std::exception& e) {
    std::cerr << "nnfuse: internal error: " << e.what() << "\n";
    return cli::kExitError;
  }
}
