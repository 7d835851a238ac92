#include "runtime/threads.h"

#include <omp.h>

namespace nnfuse {

int plan_threads(int requested) { return requested > 0 ? requested : omp_get_num_procs(); }

ScopedThreads::ScopedThreads(int n) : saved_(omp_get_max_threads()) {
  if (n > 0 && n != saved_) omp_set_num_threads(n);
}

ScopedThreads::~ScopedThreads() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

}  // namespace nnfuse
