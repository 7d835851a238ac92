// The user phase of the pipeline: the fusions a user asked for, which run before the built-in
// ones so that they take precedence (whether those are on or off).
#pragma once

#include <memory>
#include <string>

#include "passes/pass.h"

namespace nnfuse {

// The switch file's user rules (ctx.switches->user_rules()), each fused into generated kernels;
// it runs where the switch file gives rules.
std::unique_ptr<Pass> make_user_rules_pass();
// The registered user fusion patterns (register_fusion_pattern), those the switch file leaves
// on; it runs where patterns are registered.
std::unique_ptr<Pass> make_user_patterns_pass();
// How a user fusion pattern appears among the passes (switchable by its name).
PassInfo user_pattern_info(const std::string& name);

}  // namespace nnfuse
