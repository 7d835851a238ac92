// The geometry of a MaxPool / AveragePool node as oneDNN takes it; shared with FusedConvPool,
// whose pooling part runs on the conv's output buffer.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>

#include "kernels/kernel.h"

namespace nnfuse::onednn {

struct PoolSpec {
  Dims x_shape, y_shape;
  Layout in_layout = Layout::kPlain, out_layout = Layout::kPlain;
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  Dims strides, kernel, dilations, pad_l, pad_r;  // as oneDNN takes them (dilations from 0)
};

// The node's geometry when oneDNN can pool it, else nullopt (bad attributes included: the
// reference kernel reports those) with the reason in *why when given.
std::optional<PoolSpec> pool_spec(const NodeInfo& info, std::string* why = nullptr);

}  // namespace nnfuse::onednn
