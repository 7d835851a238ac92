#include "passes/pass.h"

#include "config/switches.h"

namespace nnfuse {

bool Pass::enabled(const PassContext& ctx) const {
  return ctx.switches ? ctx.switches->enabled(info()) : info().default_on;
}

}  // namespace nnfuse
