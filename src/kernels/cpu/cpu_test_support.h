// Test helpers for the cpu_* kernel tests, on top of kernels/cpu/test_util.h: asking a named
// factory whether it accepts a node, and running a kernel in place (output storage = input's).
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse::testing {

// Random 8-bit values over the whole range of t (int8 or uint8), for the quantized kernels.
inline Tensor random_q8(const Dims& shape, DType t, uint32_t seed) {
  const bool s = t == DType::kInt8;
  const Tensor f = random_tensor(shape, seed, s ? -128.0f : 0.0f, s ? 127.49f : 255.49f);
  return run_ref1("Cast", {f}, {{"to", attr_int(static_cast<int64_t>(t))}});
}

inline const KernelFactory* find_factory(const std::string& op, const std::string& name) {
  for (const KernelFactory& f : kernels_for(op)) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// Does the factory `name` accept this node?
inline bool fast_accepts(const std::string& name, const std::string& op,
                         const std::vector<FastInput>& inputs,
                         const std::map<std::string, Attribute>& attrs = {}, int64_t opset = 17,
                         size_t num_outputs = 1) {
  const KernelFactory* f = find_factory(op, name);
  if (!f) return false;
  OneNode one(op, inputs, attrs, num_outputs);
  return f->accepts(one.info(opset));
}

// Runs the factory `name` with output 0 planned over the storage of input `alias` (which must
// be what the factory's in_place_input reports), then compares with the reference kernel.
inline void expect_in_place_matches_ref(const std::string& name, const std::string& op,
                                        const std::vector<FastInput>& inputs, int alias,
                                        const std::map<std::string, Attribute>& attrs = {},
                                        float atol = 1e-5f, float rtol = 1e-4f,
                                        int64_t opset = 17) {
  const KernelFactory* f = find_factory(op, name);
  ASSERT_NE(f, nullptr) << name << " is not registered for " << op;
  OneNode one(op, inputs, attrs);
  const NodeInfo info = one.info(opset);
  ASSERT_TRUE(f->accepts(info));
  ASSERT_NE(f->in_place_input, nullptr);
  ASSERT_EQ(f->in_place_input(info, 0), alias);
  auto kernel = f->create(info);
  KernelIO io;
  std::vector<Tensor> converted;
  converted.reserve(inputs.size());
  std::shared_ptr<std::byte[]> shared;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = to_layout(inputs[i].value, inputs[i].layout);
    if (static_cast<int>(i) == alias) {
      shared = std::shared_ptr<std::byte[]>(new std::byte[t.nbytes() + 1]);
      std::memcpy(shared.get(), t.raw(), t.nbytes());
      t = Tensor::over(shared, 0, t.dtype(), t.shape(), t.layout());
    }
    converted.push_back(t);
  }
  for (const Tensor& t : converted) io.inputs.push_back(&t);
  const Tensor& src = converted[static_cast<size_t>(alias)];
  const Layout out_layout = f->output_layout ? f->output_layout(info, 0) : Layout::kPlain;
  std::vector<Tensor> plain;
  for (const FastInput& in : inputs) plain.push_back(in.value);
  std::vector<Tensor> ref = run_ref(op, plain, attrs, 1, opset);
  io.outputs.push_back(Tensor::over(shared, 0, ref[0].dtype(), ref[0].shape(), out_layout));
  ASSERT_EQ(io.outputs[0].nbytes(), src.nbytes());
  kernel->run(io);
  ASSERT_EQ(io.outputs[0].raw(), src.raw()) << "the kernel did not write in place";
  expect_close(to_layout(io.outputs[0], Layout::kPlain), ref[0], atol, rtol);
}

// Deterministic pseudo-random int64 tensor with values in [lo, hi].
inline Tensor random_int64(const Dims& shape, uint32_t seed, int64_t lo, int64_t hi) {
  Tensor t(DType::kInt64, shape);
  int64_t* p = t.data<int64_t>();
  uint32_t s = seed * 2654435761u + 777u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = lo + static_cast<int64_t>((s >> 8) % static_cast<uint32_t>(hi - lo + 1));
  }
  return t;
}

inline Tensor scalar_f(float v) { return Tensor::scalar<float>(v); }

}  // namespace nnfuse::testing
