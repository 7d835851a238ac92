// Reference FusedRegion: the region evaluated op by op (codegen::evaluate). Also the run-time
// fallback when its generated code cannot be built.
#include "codegen/codegen.h"
#include "kernels/ref/ref_kernels.h"
#include "ops/region.h"

namespace nnfuse {

namespace {

using ops::fused_region_of;

std::string supports_fused_region(const Node& node, int64_t) {
  try {
    (void)fused_region_of(node);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void run_fused_region(KernelContext& ctx) {
  const codegen::Region r = fused_region_of(ctx.node);
  std::vector<const float*> in;
  for (size_t i = 0; i < r.input_shapes.size(); ++i) {
    const Tensor& t = ctx.in(i);
    const Dims want(r.input_shapes[i].begin(), r.input_shapes[i].end());
    NNFUSE_CHECK(t.dtype() == DType::kFloat32 && t.shape() == want, ctx.node.describe(), ": input ",
                 i, " is ", dtype_name(t.dtype()), dims_str(t.shape()), ", expected ", "float32",
                 dims_str(want));
    in.push_back(t.data<float>());
  }
  Tensor out(DType::kFloat32, Dims(r.output_shape.begin(), r.output_shape.end()));
  codegen::evaluate(r, in, out.data<float>());
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void append_fused_region_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"FusedRegion", run_fused_region, supports_fused_region});
}

}  // namespace nnfuse
