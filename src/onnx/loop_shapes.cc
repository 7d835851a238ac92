#include "onnx/loop_shapes.h"

#include <onnx/onnx_pb.h>

#include <string>

#include "ops/op.h"

namespace nnfuse {

namespace {

bool fixed(const onnx::TensorShapeProto::Dimension& d) { return d.has_dim_value(); }

// Makes each dim of `in` unknown that `out` does not give the same fixed size (all of them when
// the ranks differ or `out` has no shape). Returns the number changed.
size_t relax(onnx::ValueInfoProto& in, const onnx::ValueInfoProto& out) {
  if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) return 0;
  onnx::TensorShapeProto* s = in.mutable_type()->mutable_tensor_type()->mutable_shape();
  const bool out_shaped = out.type().has_tensor_type() && out.type().tensor_type().has_shape();
  const onnx::TensorShapeProto* o = out_shaped ? &out.type().tensor_type().shape() : nullptr;
  if (o && o->dim_size() != s->dim_size()) o = nullptr;
  size_t changed = 0;
  for (int j = 0; j < s->dim_size(); ++j) {
    onnx::TensorShapeProto::Dimension* d = s->mutable_dim(j);
    if (!fixed(*d)) continue;
    if (o && fixed(o->dim(j)) && o->dim(j).dim_value() == d->dim_value()) continue;
    d->clear_dim_value();
    d->set_dim_param(in.name() + "_carried_" + std::to_string(j));
    ++changed;
  }
  return changed;
}

}  // namespace

size_t relax_loop_carried_shapes(onnx::GraphProto& g) {
  size_t changed = 0;
  for (onnx::NodeProto& n : *g.mutable_node()) {
    const Op op = op_of(n.domain(), n.op_type());
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) changed += relax_loop_carried_shapes(*a.mutable_g());
      for (onnx::GraphProto& sub : *a.mutable_graphs()) changed += relax_loop_carried_shapes(sub);
      if (a.name() != "body" || !a.has_g()) continue;
      onnx::GraphProto& body = *a.mutable_g();
      // Loop: inputs (iteration, cond, carried...), outputs (cond, carried..., scans...).
      // Scan: inputs (states..., scan slices...), outputs (states..., scans...).
      size_t first_in = 0, first_out = 0, carried = 0;
      if (op == Op::kLoop) {
        first_in = 2;
        first_out = 1;
        carried = n.input_size() > 2 ? static_cast<size_t>(n.input_size()) - 2 : 0;
      } else if (op == Op::kScan) {
        int64_t scans = 0;
        for (const onnx::AttributeProto& b : n.attribute()) {
          if (b.name() == "num_scan_inputs") scans = b.i();
        }
        if (scans < 0 || scans > n.input_size()) continue;
        carried = static_cast<size_t>(n.input_size() - scans);
      } else {
        continue;
      }
      for (size_t k = 0; k < carried; ++k) {
        const int i = static_cast<int>(first_in + k), o = static_cast<int>(first_out + k);
        if (i >= body.input_size() || o >= body.output_size()) break;
        changed += relax(*body.mutable_input(i), body.output(o));
      }
    }
  }
  return changed;
}

}  // namespace nnfuse
