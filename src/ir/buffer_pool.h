// The storage of tensors made while a model runs (its outputs, values whose shape is known only
// then, what reference kernels return). Large buffers are kept when their last owner lets go
// and handed out again for a request of about their size, as ONNX Runtime's arena does: fresh
// memory from the system is zeroed and mapped page by page on first touch, and a detector's
// run-time tensors (tens of MiB) cost it thousands of page faults on every run (Faster R-CNN
// MobileNetV3 ran 15-25% faster with them gone).
#pragma once

#include <cstddef>
#include <memory>

namespace nnfuse {

// Requests of at least this many bytes go through the pool; smaller ones to operator new.
inline constexpr size_t kPooledMinBytes = size_t{256} << 10;

// `bytes` bytes, zeroed when `zero`, freed (or kept in the pool) with their last owner.
// Pooled buffers start on a multiple of 64 bytes.
std::shared_ptr<std::byte[]> tensor_bytes(size_t bytes, bool zero);

struct BufferPoolStats {
  size_t cached_bytes = 0;   // held for reuse now
  size_t cached_blocks = 0;  // buffers held for reuse now
  size_t reused = 0;         // requests served from the pool so far
  size_t allocated = 0;      // pooled-size requests that took new memory so far
  size_t limit_bytes = 0;    // the most the pool holds
};
BufferPoolStats buffer_pool_stats();
// The most bytes the pool holds (default 256 MiB, or $NNFUSE_BUFFER_POOL_MB MiB; 0 under the
// address sanitizer, which must see every buffer freed). Lowering it frees what no longer fits;
// 0 turns the pool off.
void set_buffer_pool_limit(size_t bytes);
// Frees every buffer the pool holds.
void trim_buffer_pool();

// While one is alive, the buffers its thread lets go of are freed, not kept for reuse: around
// compiling and planning, where what is let go of is weights (an initializer a fold replaced,
// a weight a kernel prepacked), which no run asks for again. Kept, they stayed resident beside
// their packed copies: a QDQ ResNet-50 peaked at 244 MiB, 100 of them released weights.
class ScopedPoolBypass {
 public:
  ScopedPoolBypass();
  ~ScopedPoolBypass();
  ScopedPoolBypass(const ScopedPoolBypass&) = delete;
  ScopedPoolBypass& operator=(const ScopedPoolBypass&) = delete;

 private:
  bool outer_;
};

}  // namespace nnfuse
