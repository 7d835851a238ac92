#include "runtime/calibrate.h"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>

#include "ir/error.h"

namespace nnfuse {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The best of `reps` timings of f().
template <typename F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

double peak_flops() {
  constexpr int64_t n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  auto gemm = [&] {
    const dnnl_status_t st =
        dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    NNFUSE_CHECK(st == dnnl_success, "calibrate: sgemm failed (status ", static_cast<int>(st), ")");
  };
  gemm();  // warm: oneDNN's kernel generated, pages touched
  return 2.0 * n * n * n / best_of(8, gemm);
}

// Bytes read and written per second copying 2 x 64 MiB buffers, far beyond the caches.
double bandwidth() {
  constexpr size_t bytes = size_t{64} << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  const int threads = omp_get_max_threads();
  auto copy = [&] {
    const size_t chunk = (bytes / static_cast<size_t>(threads) + 4095) / 4096 * 4096;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const size_t b = std::min(bytes, static_cast<size_t>(t) * chunk);
      const size_t e = std::min(bytes, b + chunk);
      if (e > b) std::memcpy(dst.data() + b, src.data() + b, e - b);
    }
  };
  copy();
  return 2.0 * bytes / best_of(5, copy);
}

// One fork/join of the kernels' thread team: the fixed cost every kernel pays.
double launch_seconds() {
  constexpr int reps = 2000;
  volatile int sink = 0;
  auto regions = [&] {
    for (int i = 0; i < reps; ++i) {
#pragma omp parallel
      {
        if (omp_get_thread_num() == 0) sink = sink + 1;
      }
    }
  };
  regions();
  return best_of(3, regions) / reps;
}

}  // namespace

cost::Calibration calibrate_machine(int threads) {
  const int saved = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  cost::Calibration c;
  c.threads = omp_get_max_threads();
  c.cpu = cost::cpu_model_name();
  c.machine.flops_per_s = peak_flops();
  c.machine.bytes_per_s = bandwidth();
  c.machine.launch_s = launch_seconds();
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c.measured_at = when;
  omp_set_num_threads(saved);
  return c;
}

}  // namespace nnfuse
