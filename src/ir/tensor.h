// Tensor: nnfuse/tensor.h (part of the public API).
#pragma once

#include <cstddef>
#include <memory>

#include "ir/error.h"
#include "nnfuse/tensor.h"

namespace nnfuse {

// `n` rounded up to a multiple of `alignment`.
constexpr size_t align_up(size_t n, size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

// Whether a tensor of this rank can be stored channels-last (Layout::kNHWC): 3 to 5.
constexpr bool channels_last_rank(size_t rank) { return rank >= 3 && rank <= 5; }

// The size of a huge page: buffers of at least this many bytes from aligned_bytes start on a
// multiple of it and are offered to the kernel as huge pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` uninitialised bytes starting at a multiple of `alignment` (a power of two; of
// kHugePageBytes for buffers that large, advised to be backed by huge pages), freed with their
// last owner. For buffers that live as long as a plan or a kernel (arenas, scratch, prepacked
// weights), not for tensors made on every run: a huge page is zeroed, and perhaps compacted
// for, when it is first touched, and a 15 MiB Expand output made on every run of a detector's
// box head took 17-20 ms on huge pages against 4 ms on small ones.
std::shared_ptr<std::byte[]> aligned_bytes(size_t bytes, size_t alignment);

}  // namespace nnfuse
