// MultiHeadAttention (nnfuse's domain): scaled dot-product attention over H heads, the heads
// split from and merged back into the hidden axis, as BERT's Reshape/Transpose/MatMul/Softmax
// chain computes it:
//   out[b, i, h] = sum_j softmax_j(scale * q[b, i, h] . k[b, j, h] + mask[b, h, i, j]) v[b, j, h]
// where x[b, i, h] is columns [h * D, (h + 1) * D) of row i, and key j is -inf for query i when
// causal and j > i + (Sk - Sq).
//   inputs:  Q [B, Sq, H*D], K [B, Sk, G*D], V [B, Sk, G*D], Mask? (additive, broadcastable to
//            [B, H, Sq, Sk], rank <= 4); with qkv_packed = 1, input 0 is [B, S, (H+2G)*D]
//            holding [Q | K | V] and inputs 1 and 2 are omitted; Cos?, Sin? (both or neither)
//            [Sq, R], R even and at most D: rotary position embeddings applied to Q and K
//            first; PastKey?, PastValue? (both or neither) [B, G, P, D]: the KV cache, K and V
//            then being the new keys and values, attended after the past ones.
//   outputs: [B, Sq, H*D]; with a past, PresentKey and PresentValue [B, G, P + Sk, D].
//   attrs:   num_heads (required), kv_num_heads G (default H; grouped-query attention), scale
//            (default 1 / sqrt(D)), causal (0), qkv_packed (0), rotary_interleaved (0: rotate-half
//            as GPT-NeoX and LLaMA; 1: GPT-J's pairs).
#pragma once

#include <optional>

#include "ops/def.h"

namespace nnfuse::ops {

namespace attention {
inline constexpr size_t kQ = 0, kK = 1, kV = 2, kMask = 3, kCos = 4, kSin = 5, kPastKey = 6,
                        kPastValue = 7;
}

struct MultiHeadAttention {
  Value* q = nullptr;  // or the packed [Q | K | V]
  Value* k = nullptr;
  Value* v = nullptr;
  Value* mask = nullptr;
  Value* cos = nullptr;
  Value* sin = nullptr;
  Value* past_key = nullptr;
  Value* past_value = nullptr;
  int64_t num_heads = 0;
  std::optional<int64_t> kv_num_heads = {};
  float scale = 1.0f;
  bool causal = false;
  bool qkv_packed = false;
  bool rotary_interleaved = false;

  // A MultiHeadAttention node's values and attributes.
  static MultiHeadAttention of(const Node& n);
  NodeSpec spec() const;
};

void append_attention_defs(std::vector<OpDef>& t);

}  // namespace nnfuse::ops
