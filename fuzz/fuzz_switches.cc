// The fusion switch file in its three forms (CANN GE JSON, PassName:on|off lines, rules JSON)
// and the user rules it declares. A typed nnfuse::Error is the expected refusal.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/switches.h"
#include "fuzz_common.h"
#include "ir/error.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/pipeline.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nnfuse::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<nnfuse::PassInfo> passes = nnfuse::list_passes();
  static const std::map<std::string, std::vector<std::string>> ops = nnfuse::pass_op_lists();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    nnfuse::FusionSwitches s = nnfuse::FusionSwitches::parse(text, "fuzz.cfg", passes, ops);
    for (const nnfuse::PassInfo& p : passes) (void)s.enabled(p);
    for (const nnfuse::UserRule& rule : s.user_rules()) (void)nnfuse::user_rule_problem(rule);
  } catch (const nnfuse::Error&) {
  }
  return 0;
}
