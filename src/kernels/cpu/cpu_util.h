// Helpers shared by the fast CPU kernels (cpu_*.cc): threading, type and shape checks.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "kernels/kernel.h"

namespace nnfuse::cpu {

// Below this many elements of simple work a kernel stays on one thread: an OpenMP fork/join
// costs a few microseconds, as much as streaming ~32K floats.
constexpr int64_t kParallelGrain = 32768;

// Splits [0, n) into contiguous pieces of at least `grain` elements (rounded to multiples of
// 16, so vector loops keep their alignment) and calls f(begin, end) for each, in parallel when
// there is more than one piece. f must not throw.
template <typename F>
void parallel_range(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  const int64_t threads = omp_get_max_threads();
  int64_t pieces = std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (pieces <= 1 || omp_in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t chunk = ((n + pieces - 1) / pieces + 15) / 16 * 16;
  pieces = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(static_cast <int>(pieces))
  for (int64_t p = 0; p < pieces; ++p) f(p * chunk, std::min(n, (p + 1) * chunk));
}

// Calls f(task) for every task in [0, tasks), in parallel when the total `work` (in element
// operations) is worth it. f must not throw.
template <typename F>
void parallel_tasks(int64_t tasks, int64_t work, F&& f) {
  if (tasks <= 0) return;
  const int64_t threads = omp_get_max_threads();
  const bool par = tasks > 1 && threads > 1 && work >= kParallelGrain && !omp_in_parallel();
  if (!par) {
    for (int64_t t = 0; t < tasks; ++t) f(t);
    return;
  }
  const int nt = static_cast<int>(std::min<int64_t>(threads, tasks));
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t t = 0; t < tasks; ++t) f(t);
}

// Like parallel_tasks, but hands each thread one contiguous block [begin, end) of the tasks, so
// it can walk them with an incremental index instead of decoding each one.
template <typename F>
void parallel_blocks(int64_t tasks, int64_t work, F&& f) {
  if (tasks <= 0) return;
  const int64_t threads = omp_get_max_threads();
  const int64_t nt = std::min<int64_t>(threads, tasks);
  if (nt <= 1 || work < kParallelGrain || omp_in_parallel()) {
    f(int64_t{0}, tasks);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(static_cast <int>(nt))
  for (int64_t t = 0; t < nt; ++t) f(tasks * t / nt, tasks * (t + 1) / nt);
}

// A barrier for the threads of one parallel region that spins rather than sleeps, for kernels
// whose steps each take microseconds: OpenMP's barrier took 1.4 us a wait on 2 threads (AMD EPYC
// in a VM, where a cache line takes 0.2 us from core to core), this one a round trip of that
// line. After kSpins polls a waiting thread yields its core, so a team larger than the cores free
// still moves. Made for a team of n threads, each calls wait() at every step, n times in all.
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  void wait() {
    const uint32_t gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      arrived_.store(0, std::memory_order_relaxed);
      gen_.store(gen + 1, std::memory_order_release);
      return;
    }
    for (int spins = 0; gen_.load(std::memory_order_acquire) == gen; ++spins) {
      if (spins >= kSpins) std::this_thread::yield();
    }
  }

 private:
  static constexpr int kSpins = 1 << 16;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<uint32_t> gen_{0};
  int n_;
};

// The widest float vector this CPU runs the hand-vectorized kernels with, in floats: 16 with
// AVX-512F, 8 with AVX2 and FMA, else 4 (SSE2, or any other CPU). The environment variable
// `cap_env` set to avx2 or sse2 caps it, so the tests run every width.
inline int vector_width(const char* cap_env) {
  const char* env = std::getenv(cap_env);
  const std::string cap = env ? env : "";
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (cap != "avx2" && cap != "sse2" && __builtin_cpu_supports("avx512f")) return 16;
  if (cap != "sse2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
#endif
  return 4;
}

inline int64_t numel_of(const Dims& d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < d.size(); ++i) p *= d[i];
  return p;
}

// True when input i is present with dtype t.
inline bool input_is(const NodeInfo& info, size_t i, DType t) {
  return info.has_input(i) && info.input_dtype(i) == t;
}
// True when every present input from `first` on is float32 (and input 0 is present).
inline bool float_inputs(const NodeInfo& info, size_t first = 0) {
  if (!info.has_input(0)) return false;
  for (size_t i = first; i < info.node.num_inputs(); ++i) {
    if (info.has_input(i) && info.input_dtype(i) != DType::kFloat32) return false;
  }
  return true;
}
// Why float_inputs(info) is false, "" when it is true.
inline std::string float_inputs_problem(const NodeInfo& info) {
  if (!info.has_input(0)) return input_label(info, 0) + " is missing";
  for (size_t i = 0; i < info.node.num_inputs(); ++i) {
    if (info.has_input(i) && info.input_dtype(i) != DType::kFloat32) {
      return input_label(info, i) + " is " + dtype_name(info.input_dtype(i)) + ", not float32";
    }
  }
  return "";
}
inline Layout input_layout(const NodeInfo& info, size_t i) {
  return i < info.input_layouts.size() ? info.input_layouts[i] : Layout::kPlain;
}
// True when only output 0 is wanted (further outputs absent).
inline bool single_output(const Node& n) {
  for (size_t k = 1; k < n.num_outputs(); ++k) {
    if (n.output(k)) return false;
  }
  return n.num_outputs() >= 1 && n.output(0) != nullptr;
}

// Normalizes an axis into [0, rank), or nullopt when out of range.
inline std::optional<int64_t> axis_in(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}
// Normalizes an axis or throws a runtime error naming the node.
inline int64_t checked_axis(int64_t axis, int64_t rank, const std::string& who) {
  std::optional<int64_t> a = axis_in(axis, rank);
  if (!a) fail(ErrorKind::kRuntime, who, ": axis ", axis, " is out of range for rank ", rank);
  return *a;
}

// Requires a float32 tensor; throws a runtime error naming the node otherwise.
inline void require_float(const Tensor& t, const std::string& who, const char* what = "input") {
  if (t.dtype() != DType::kFloat32) {
    fail(ErrorKind::kRuntime, who, ": ", what, " has type ", dtype_name(t.dtype()),
         ", expected float32");
  }
}

// Numpy broadcast of two shapes, or nullopt when incompatible.
inline std::optional<Dims> broadcast_dims(const Dims& a, const Dims& b) {
  const size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace nnfuse::cpu
