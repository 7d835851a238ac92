#include "ir/buffer_pool.h"

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace nnfuse {

namespace {

constexpr size_t kAlignment = 64;
// Capacities are whole pages; a buffer serves requests up to a quarter smaller than itself.
constexpr size_t kGranule = 4096;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

size_t default_limit() {
  if (kSanitized) return 0;
  if (const char* v = std::getenv("NNFUSE_BUFFER_POOL_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(v, &end, 10);
    if (end != v && *end == '\0') return static_cast<size_t>(mb) << 20;
  }
  return size_t{256} << 20;
}

void free_block(std::byte* p) { ::operator delete[](p, std::align_val_t(kAlignment)); }

struct Pool {
  std::mutex mu;
  std::multimap<size_t, std::byte*> free;  // capacity -> buffer
  size_t cached = 0, reused = 0, allocated = 0;
  size_t limit = default_limit();

  // Under the lock: drops buffers, largest first, until at most `keep` bytes are held; returns
  // them to be freed outside the lock.
  std::vector<std::byte*> shrink_to(size_t keep) {
    std::vector<std::byte*> out;
    while (cached > keep && !free.empty()) {
      auto it = std::prev(free.end());
      cached -= it->first;
      out.push_back(it->second);
      free.erase(it);
    }
    return out;
  }
};

// Never destroyed: tensors may outlive every other static object.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

thread_local bool t_bypass = false;  // ScopedPoolBypass

void give_back(std::byte* p, size_t capacity) {
  if (t_bypass) {
    free_block(p);
    return;
  }
  Pool& pl = pool();
  {
    std::lock_guard<std::mutex> lock(pl.mu);
    if (pl.cached + capacity <= pl.limit) {
      pl.free.emplace(capacity, p);
      pl.cached += capacity;
      return;
    }
  }
  free_block(p);
}

}  // namespace

std::shared_ptr<std::byte[]> tensor_bytes(size_t bytes, bool zero) {
  const size_t n = bytes == 0 ? 1 : bytes;
  Pool& pl = pool();
  if (n < kPooledMinBytes) {
    return std::shared_ptr<std::byte[]>(zero ? new std::byte[n]() : new std::byte[n]);
  }
  size_t capacity = (n + kGranule - 1) / kGranule * kGranule;
  std::byte* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(pl.mu);
    auto it = pl.free.lower_bound(capacity);
    if (it != pl.free.end() && it->first <= capacity + capacity / 4) {
      capacity = it->first;
      p = it->second;
      pl.cached -= capacity;
      pl.free.erase(it);
      ++pl.reused;
    } else {
      ++pl.allocated;
    }
  }
  if (!p) {
    try {
      p = static_cast<std::byte*>(::operator new[](capacity, std::align_val_t(kAlignment)));
    } catch (const std::bad_alloc&) {
      // What the pool holds may be what is missing.
      trim_buffer_pool();
      p = static_cast<std::byte*>(::operator new[](capacity, std::align_val_t(kAlignment)));
    }
  }
  if (zero) std::memset(p, 0, n);
  return std::shared_ptr<std::byte[]>(p, [capacity](std::byte* q) { give_back(q, capacity); });
}

ScopedPoolBypass::ScopedPoolBypass() : outer_(t_bypass) { t_bypass = true; }
ScopedPoolBypass::~ScopedPoolBypass() { t_bypass = outer_; }

BufferPoolStats buffer_pool_stats() {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  return {pl.cached, pl.free.size(), pl.reused, pl.allocated, pl.limit};
}

void set_buffer_pool_limit(size_t bytes) {
  Pool& pl = pool();
  std::vector<std::byte*> drop;
  {
    std::lock_guard<std::mutex> lock(pl.mu);
    pl.limit = bytes;
    drop = pl.shrink_to(bytes);
  }
  for (std::byte* p : drop) free_block(p);
}

void trim_buffer_pool() {
  Pool& pl = pool();
  std::vector<std::byte*> drop;
  {
    std::lock_guard<std::mutex> lock(pl.mu);
    drop = pl.shrink_to(0);
  }
  for (std::byte* p : drop) free_block(p);
}

}  // namespace nnfuse
