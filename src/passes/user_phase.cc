#include "passes/user_phase.h"

#include "config/switches.h"
#include "ops/user_pattern.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/fusions/fusions.h"

namespace nnfuse {

namespace {

class UserRules : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"user_rules", "the switch file's user fusion rules", false, true};
    return i;
  }
  bool enabled(const PassContext& ctx) const override {
    return ctx.switches && !ctx.switches->user_rules().empty();
  }
  void run(Graph& g, PassContext& ctx) const override {
    run_user_rules(g, ctx.switches->user_rules(), ctx);
  }
};

class UserPatterns : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"fusion_patterns", "the registered user fusion patterns", false, true};
    return i;
  }
  bool enabled(const PassContext&) const override { return !fusion_patterns().empty(); }
  void run(Graph& g, PassContext& ctx) const override {
    run_fusion_patterns(g, ctx, [&](const std::string& name) {
      return !ctx.switches || ctx.switches->enabled(user_pattern_info(name));
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_user_rules_pass() { return std::make_unique<UserRules>(); }
std::unique_ptr<Pass> make_user_patterns_pass() { return std::make_unique<UserPatterns>(); }

PassInfo user_pattern_info(const std::string& name) {
  return {name, "user fusion pattern (registered with register_fusion_pattern)", true, true};
}

}  // namespace nnfuse
