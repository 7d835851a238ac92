// The pieces of an exported attention block the attention fusion (attention.cc) reads: Q, K and
// V split into heads, their packed source, the scores' scale, mask and causal Where, and the
// shapes they must have.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ops/attention.h"
#include "pattern/pattern.h"

namespace nnfuse::attn {

// Whether `t` is a Transpose with that perm.
bool has_perm(const Node* t, const std::vector<int64_t>& perm);

// A scalar constant's value.
std::optional<double> scalar_value(const Value* v);

// v's static shape, or for a Slice output of unknown shape, the one its constant bounds give.
std::optional<Dims> known_shape(const Value* v);

// Rotary position embeddings on x [B, H, S, D] (or [B, S, H, D]) as exporters write them
// (attention_heads.cc):
//   y = x * cos + rotate_half(x) * sin, rotate_half(x) = Concat(-x[.., R/2:R], x[.., :R/2])
// or GPT-J's interleaved rotate_every_two(x) = stack(-x[.., 1::2], x[.., 0::2]).flatten(-2)
// (either order of every sum and product), or partial: Concat(that of x[.., :R], x[.., R:]);
// cos and sin constants [.., S, R] (or [.., S, 1, R]) broadcast over batch and heads. The
// tables as [S, R].
struct Rotary {
  Value* x = nullptr;
  Tensor cos, sin;
  int64_t dims = 0;          // R
  bool interleaved = false;  // GPT-J's rotate_every_two (pairs) instead of rotate_half
  bool heads_first = true;   // on [B, H, S, D] (else on [B, S, H, D], before the Transpose)
  std::vector<Node*> nodes;
};
std::optional<Rotary> rotary_of(Value* y);
bool same_tables(const Rotary& a, const Rotary& b);

// Grouped-query K/V widened from G to G*n heads, as repeat_kv writes it:
//   Reshape(Expand(Unsqueeze(x [B, G, S, D], axes [2]), [B, G, n, S, D]), [B, G*n, S, D])
struct Widening {
  Value* x = nullptr;
  int64_t group = 1;  // n
  std::vector<Node*> nodes;
};
std::optional<Widening> widening_of(Value* y);

// One of Q, K, V split into heads: src [B, S, H*D] -> Reshape [B, S, H, D] -> Transpose(s);
// or, as nn.MultiheadAttention writes it, sequence-first src [S, B, H*D] -> Reshape
// [S, B*H, D] -> Transpose(s) (`seq_first`). Between the first Transpose<0,2,1,3> and the
// rest, rotary embeddings (Q and K) and the widening of grouped-query heads (K and V): then
// `heads` is the split's own (G) and `group` the widening's n.
struct HeadSplit {
  Value* src = nullptr;
  int64_t batch = 0, seq = 0, heads = 0, dim = 0;
  bool seq_first = false;
  int64_t group = 1;
  std::optional<Rotary> rotary;
  // A KV cache: Concat(past [B, G, P, D], the new rows, axis 2) = present, between the rotary
  // embeddings and the widening (K and V).
  Value* past = nullptr;
  Value* present = nullptr;
  int64_t past_len = 0;
};

// Walks back from `v` through Transposes to the Reshape; their composition must give Q or V
// as [B, H, S, D] (or [B*H, S, D]), K (`key`) as [B, H, D, S] (or [B*H, D, S]). Collects the
// nodes.
std::optional<HeadSplit> split_heads(Value* v, bool key, std::vector<Node*>& nodes,
                                     std::string& why);

// Q, K, V as the three equal parts of one tensor along its last axis: the outputs of one
// Split, or three Slices (chunk()). The tensor, and the nodes to absorb; nullopt otherwise.
std::optional<std::pair<Value*, std::vector<Node*>>> packed_source(Value* q, Value* k, Value* v,
                                                                   int64_t e);

// A constant bool [.., Sq, Sk] mask that keeps exactly key j <= i + (Sk - Sq) (`keep` true)
// or masks exactly those keys' complement (`keep` false).
bool is_causal(const Tensor& m, bool keep);

// A constant float [.., Sq, Sk] bias (leading dims 1) that is 0 for key j <= i + (Sk - Sq) and
// large negative (-inf or <= -1e4) for every other key.
bool is_causal_bias(const Tensor& m);

struct Scores {
  Node* qk = nullptr;  // MatMul(q side, k side)
  Value* q = nullptr;  // below any scaling
  Value* k = nullptr;
  double scale = 1.0;
  bool scaled = false;
  Value* mask = nullptr;
  bool causal = false;
};

// Peels scale (Div/Mul by a scalar), additive mask (Add) and causal (Where) ops from the
// softmax input down to the Q K^T MatMul.
std::optional<Scores> walk_scores(Value* s, std::vector<Node*>& nodes, std::string& why);

// Q, K (from the scores) and V split into the same heads, for scores of rank `rank` (4, or 3
// sequence-first); the nodes collected; nullopt with `why` otherwise.
struct Heads {
  HeadSplit q, k, v;
};
std::optional<Heads> split_qkv(const Scores& sc, Value* v, int64_t rank, std::vector<Node*>& nodes,
                               std::string& why);

// The scores below a Softmax, as a pattern node (native): matches where walk_scores does, with
// the Scores as its data and the peeled nodes as its nodes.
pattern::Pat scores_pattern(const std::string& name);

// The merge of the attention output `o` back from heads: Transpose<0,2,1,3> then Reshape
// [B, Sq, H*D]; sequence-first, Transpose<1,0,2> then Reshape [Sq, B, H*D] or [Sq*B, H*D].
// The two nodes, or why not.
std::optional<std::pair<Node*, Node*>> merge_heads(Value* o, const HeadSplit& q, std::string& why);

// The mask as MultiHeadAttention takes it: "" with `heads` left empty when it broadcasts to the
// [B, H, Sq, Sk] scores; for a sequence-first attention, whose [B*H, Sq, Sk] scores are
// batch-major, `heads` the [B, H, Sq, Sk] it is reshaped to when it is one per (batch, head);
// else why.
std::string mask_reason(const Value* mask, const HeadSplit& q, const Dims& scores, Dims& heads);

// The MultiHeadAttention node for scores `sc` and heads `h`: its inputs (Q, K, V and the
// mask; the packed form, one tensor and qkv_packed = 1, when Q, K and V are the three parts of
// one, whose nodes join `nodes`) and its attributes (num_heads, scale, causal).
struct MhaNode {
  ops::MultiHeadAttention node;  // Q, K, V, the mask and the attributes
  Tensor cos, sin;               // the rotary tables [S, R], inputs 4 and 5 once made constants
};
MhaNode mha_node(const Scores& sc, const Heads& h, std::vector<Node*>& nodes);

// A whole attention, from the Softmax `sm` over the scores `scores` (scores_pattern's match) to
// the merge of the product `pv` with V `v`: the nodes it replaces, its heads, the merged
// output, the mask's head shape (mask_reason) and the fused node; `why` says when it cannot be
// one MultiHeadAttention.
struct Attention {
  std::vector<Node*> nodes;
  Heads heads;
  Value* out = nullptr;
  Dims mask_heads;
  MhaNode mha;
  std::string why;
};
Attention attention_of(Node* sm, Node* pv, const pattern::NativeResult& scores, Value* v);

// Broadcastable to [B, H, Sq, Sk] without growing it, float32, static shape.
bool mask_fits(const Value* mask, const Dims& scores);

}  // namespace nnfuse::attn
