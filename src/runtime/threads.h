// The thread count a plan runs with, and how its kernels get it. Kernels are made with it
// (NodeInfo::num_threads: oneDNN fixes a primitive's threads when it is created, the project's
// kernels size their per-thread buffers by it), and they run with it: every OpenMP parallel
// region a kernel starts without a num_threads clause, every clause the kernels derive from
// omp_get_max_threads(), and oneDNN's primitives (its OpenMP runtime reads omp_get_max_threads()
// when one executes) take the calling thread's OpenMP thread count, its nthreads-var ICV. That
// ICV is the calling thread's own (the OpenMP data environment of its task; libgomp keeps one per
// thread), so a plan sets it for the duration of its construction and of each run
// (ScopedThreads) and restores it after: sessions with different counts run side by side, each
// with its own, and nothing is set for the process.
#pragma once

namespace nnfuse {

// The threads of a plan asked for `requested` (PlanOptions::threads): that many, or (0) one per
// core.
int plan_threads(int requested);

// The calling thread's OpenMP thread count set to `n` for this scope, then restored.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int saved_ = 0;
};

}  // namespace nnfuse
