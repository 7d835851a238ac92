#include "api/op_coverage.h"

#include "kernels/kernel.h"
#include "ops/def.h"
#include "ops/op.h"
#include "passes/auto_fuse/lower.h"
#include "runtime/plan_fold.h"

namespace nnfuse {

std::vector<OpCoverage> op_coverage() {
  std::vector<OpCoverage> out;
  for (size_t i = 1; i < static_cast<size_t>(Op::kEnd); ++i) {
    const Op op = static_cast<Op>(i);
    OpCoverage c;
    c.op = std::string(op_name(op));
    c.onnx = is_onnx_op(op);
    c.own = is_own_op(op);
    for (const KernelFactory& k : kernels_for(c.op)) {
      if (std::string(k.name) == "ref") {
        c.reference = true;
      } else {
        c.fast_kernels.emplace_back(k.name);
      }
    }
    c.generated = c.onnx && lowerable_op(op);
    c.view = is_view_op(op);
    if (c.fast_kernels.empty() && !c.reference && !c.generated && !c.view) continue;
    const ops::OpTraits& t = ops::traits_of(op);
    c.compute = t.compute;
    const ops::StrictRefusal r = ops::strict_refusal(op);
    c.strict = r == ops::StrictRefusal::kAlways     ? "always"
               : r == ops::StrictRefusal::kOnFloats ? "float"
                                                    : "";
    c.op_class = op_class_name(t.op_class);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace nnfuse
