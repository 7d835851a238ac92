// Denormals are flushed to zero while a fast plan runs (and kept by the reference plan, the
// oracle, and with NNFUSE_DENORMALS=keep); the caller's floating-point mode is restored.
#include "runtime/denormals.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cfloat>

#include "runtime/session.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace nnfuse {
namespace denormals_test {

// y = x * k for a constant k of 1s: the multiply reads x (denormals-are-zero applies).
std::unique_ptr<Graph> scale_graph(int64_t n) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({n}));
  g->add_input(x);
  Value* k = g->add_value("k");
  Tensor ones(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) ones.data<float>()[i] = 1.0f;
  k->set_constant(std::move(ones));
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({n}));
  g->add_node("Mul", "mul", {x, k}, {y});
  g->add_output(y);
  return g;
}

#if defined(__x86_64__) || defined(__i386__)
// MXCSR's control bits (rounding, masks, FTZ, DAZ); the low six are sticky exception flags
// that any float operation may set.
unsigned mxcsr_control() { return _mm_getcsr() & ~0x3Fu; }

TEST(Denormals, FlushedWhileAFastPlanRunsAndTheModeRestored) {
  if (!flush_denormals_enabled()) GTEST_SKIP() << "NNFUSE_DENORMALS=keep";
  const int64_t n = 1 << 20;  // large enough for the kernel's threads to share the work
  omp_set_num_threads(2);
#pragma omp parallel
  {
    // The worker threads exist, in the default mode, before the session runs.
    EXPECT_EQ(_mm_getcsr() & 0x8040u, 0u);
  }
  Tensor x(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = (i % 2 ? 1e-40f : 2.0f);
  const unsigned before = mxcsr_control();
  PlanOptions fast;
  fast.threads = 2;
  PlanSession s(scale_graph(n), fast);
  const Tensor y = s.run({{"x", x}})[0];
  EXPECT_EQ(mxcsr_control(), before);
#pragma omp parallel
  {
    EXPECT_EQ(_mm_getcsr() & 0x8040u, 0u);  // the workers restored too
  }
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y.data<float>()[i], i % 2 ? 0.0f : 2.0f) << "at " << i;
  }
  PlanOptions oracle;
  oracle.reference_only = true;
  PlanSession r(scale_graph(n), oracle);
  const Tensor z = r.run({{"x", x}})[0];
  EXPECT_EQ(z.data<float>()[1], 1e-40f);
  PlanOptions keep = fast;
  keep.flush_denormals = false;
  PlanSession k(scale_graph(n), keep);
  EXPECT_EQ(k.run({{"x", x}})[0].data<float>()[1], 1e-40f);
}

TEST(Denormals, FlushedOnEveryThreadOfThePlansCount) {
  // The caller runs one OpenMP thread, the plan two: the mode goes to the two the kernels run on
  // (the run sets its thread count before the mode), and the caller's count comes back.
  if (!flush_denormals_enabled()) GTEST_SKIP() << "NNFUSE_DENORMALS=keep";
  const int64_t n = 1 << 20;
  Tensor x(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = (i % 2 ? 1e-40f : 2.0f);
  PlanOptions two;
  two.threads = 2;
  PlanSession s(scale_graph(n), two);
  omp_set_num_threads(1);
  const Tensor y = s.run({{"x", x}})[0];
  EXPECT_EQ(omp_get_max_threads(), 1);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y.data<float>()[i], i % 2 ? 0.0f : 2.0f) << "at " << i;
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEST(Denormals, ScopesNestAndRestore) {
  const unsigned before = mxcsr_control();
  {
    ScopedFlushDenormals outer(true);
    {
      ScopedFlushDenormals inner(true);
      if (flush_denormals_enabled()) {
        EXPECT_NE(_mm_getcsr() & 0x8040u, 0u);
      }
    }
    if (flush_denormals_enabled()) {
      EXPECT_NE(_mm_getcsr() & 0x8040u, 0u);
    }
  }
  EXPECT_EQ(mxcsr_control(), before);
  ScopedFlushDenormals off(false);
  EXPECT_EQ(mxcsr_control(), before);
}
#endif

}  // namespace denormals_test
}  // namespace nnfuse
