// nnfuse: an operator-fusion compiler and runtime for ONNX models.
#include <iostream>

#include "ir/error.h"
#include "ir/progress.h"
#include "tools/nnfuse/commands.h"

namespace {

// The atc-style spelling: nnfuse --model M.onnx --output OUT [--fusion_switch_file F]
// [--dump_graph yaml|json|dot --debug_path DIR] [--report R] is `nnfuse compile`.
bool is_atc_style(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--model" || a.rfind("--model=", 0) == 0) return true;
  }
  return false;
}

// --quiet: the progress line drawn on a terminal during long steps (ir/progress.h) is off.
constexpr const char* kQuietHelp = "No progress line on the terminal";

int atc_main(int argc, char** argv) {
  using namespace nnfuse;
  CLI::App app{"nnfuse (atc-style): compile an ONNX model with fusion"};
  std::string model, output, report;
  int framework = 5;
  cli::FusionFlags fusion;
  app.add_option("--model", model, "ONNX model file")->required();
  app.add_option("--output", output, "The fused model (.onnx added when missing)")->required();
  app.add_option("--framework", framework, "Source framework: 5 (ONNX) is the only one")
      ->check(CLI::IsMember({5}));
  app.add_option("--report", report, "Write fusion_result.json here");
  cli::add_fusion_flags(&app, fusion);
  bool quiet = false;
  app.add_flag("--quiet", quiet, kQuietHelp);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : cli::kExitUsage;
  }
  if (quiet) set_progress_enabled(false);
  return cli::compile_model(model, output, report, fusion, false);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace nnfuse;
  if (is_atc_style(argc, argv)) {
    try {
      return atc_main(argc, argv);
    } catch (const Error& e) {
      std::cerr << "nnfuse: error: " << e.what() << "\n";
      return e.kind() == ErrorKind::kUnsupported ? cli::kExitUnsupported : cli::kExitError;
    } catch (const std::exception& e) {
      std::cerr << "nnfuse: internal error: " << e.what() << "\n";
      return cli::kExitError;
    }
  }
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
  add(cli::add_compile);
  add(cli::add_verify);
  add(cli::add_list_passes);
  add(cli::add_list_ops);
  add(cli::add_explain);
  add(cli::add_report);
  add(cli::add_calibrate);
  // --quiet before the subcommand or among its options.
  bool quiet = false;
  app.add_flag("--quiet", quiet, kQuietHelp);
  for (CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_option_no_throw("--quiet") == nullptr) sub->add_flag("--quiet", quiet, kQuietHelp);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : cli::kExitUsage;
  }
  if (quiet) set_progress_enabled(false);
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
