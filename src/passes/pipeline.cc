// THE pipeline: every pass nnfuse runs, in order.
#include "passes/pipeline.h"

#include <filesystem>

#include "cost/machine.h"
#include "ir/dump.h"
#include "ir/error.h"
#include "ir/progress.h"
#include "ops/user_pattern.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/canonicalize/canonicalize.h"
#include "passes/fusions/fusion_records.h"
#include "passes/fusions/fusions.h"
#include "passes/overfusion.h"

namespace nnfuse {

namespace {

std::vector<std::unique_ptr<Pass>> make_pipeline() {
  std::vector<std::unique_ptr<Pass>> p;
  // Canonicalization: exporter noise out, constants and static shapes folded.
  p.push_back(make_identity_elimination_pass());
  p.push_back(make_shape_folding_pass());
  p.push_back(make_constant_folding_pass());
  // Einsums to MatMuls (after folding, so their shapes are static), before the fusions look
  // for MatMuls.
  p.push_back(make_einsum_lowering_pass());
  p.push_back(make_transpose_gather_pass());
  // Transformer normalizations, before anything absorbs their Adds and Muls.
  p.push_back(make_layer_norm_pass());
  p.push_back(make_rms_norm_pass());
  // GroupNorm and InstanceNormalization with their activation (before the GELU/Swish pass takes
  // a SiLU after them, and before automatic fusion takes their Mul and Add).
  p.push_back(make_group_norm_pass());
  // Transformer embeddings: lookups + sum + LayerNorm (after any LayerNorm fusion, before any
  // SkipLayerNorm fusion, which would take the last Add).
  p.push_back(make_embed_layer_norm_pass());
  // CNN fusions: BN into conv weights first, then the conv epilogues (residual Add and
  // activation), largest first.
  p.push_back(make_pad_conv_pass());
  p.push_back(make_pad_pool_pass());
  p.push_back(make_channel_shuffle_pass());
  p.push_back(make_conv_bn_pass());
  p.push_back(make_conv_add_act_pass());
  p.push_back(make_conv_act_pass());
  // BatchNorms no conv took (after the conv passes, which may still fold them).
  p.push_back(make_bn_scale_shift_pass());
  p.push_back(make_concat_scale_shift_pass());
  p.push_back(make_conv_pool_pass());
  // A squeeze-and-excitation block: its scale as one kernel, then the scale into the projection
  // conv (both after the conv epilogues), or else the Mul by it into the scale's kernel.
  p.push_back(make_squeeze_excite_pass());
  p.push_back(make_scaled_conv_pass());
  p.push_back(make_squeeze_excite_scale_pass());
  // A residual computed by a second conv, into the FusedConv it feeds (after the passes that
  // read FusedConv's plain form).
  p.push_back(make_conv_skip_conv_pass());
  // Sibling 1x1 convs of one input as one product (after every pass that reads a FusedConv).
  p.push_back(make_horizontal_conv_pass());
  // A 1x1 expansion and the depthwise conv reading it (after the conv epilogues and the passes
  // that read a FusedConv's plain form).
  p.push_back(make_expand_depthwise_pass());
  // Dense layers: the classifier head first (it absorbs its Gemm), then Gemm/MatMul epilogues.
  p.push_back(make_pool_gemm_pass());
  p.push_back(make_matmul_add_act_pass());
  p.push_back(make_gemm_act_pass());
  // Attention once its projections are FusedMatMuls, then those projections as one.
  p.push_back(make_attention_pass());
  p.push_back(make_qkv_projection_pass());
  // GELU/Swish that no dense layer took as its epilogue.
  p.push_back(make_gelu_pass());
  // A gated FFN: its gate (with the activation the two passes above gave it) and up projections.
  p.push_back(make_gated_ffn_pass());
  p.push_back(make_gated_ffn_chunk_pass());
  // A pre-norm block's norm into the dense layer that alone reads it (the gated one included),
  // before the residual Add + LayerNorm fusions: the Add then goes into the dense layer before.
  p.push_back(make_layer_norm_matmul_pass());
  // Residual Add + LayerNorm, once the dense layers' bias Adds are in their MatMuls.
  p.push_back(make_skip_layer_norm_pass());
  p.push_back(make_matmul_layer_norm_pass());
  // The residual Adds after dense layers that no LayerNorm fusion took.
  p.push_back(make_matmul_residual_pass());
  // A layer scale after a dense layer into its weights.
  p.push_back(make_layer_scale_pass());
  // Feature maps flattened to tokens and back, in the order that is a view on NHWC storage.
  p.push_back(make_spatial_view_pass());
  // Whatever cheap ops are left: generated kernels.
  p.push_back(make_auto_fusion_pass());
  return p;
}

}  // namespace

const std::vector<std::unique_ptr<Pass>>& pipeline() {
  static const std::vector<std::unique_ptr<Pass>> passes = make_pipeline();
  return passes;
}

PassInfo user_pattern_info(const std::string& name) {
  return {name, "user fusion pattern (registered with register_fusion_pattern)", true, true};
}

std::vector<PassInfo> list_passes() {
  std::vector<PassInfo> r;
  for (const auto& p : fusion_patterns()) r.push_back(user_pattern_info(p->name));
  for (const auto& p : pipeline()) r.push_back(p->info());
  return r;
}

std::map<std::string, std::vector<std::string>> pass_op_lists() {
  std::map<std::string, std::vector<std::string>> r;
  for (const PassInfo& p : list_passes()) {
    if (!p.ops.empty()) r[p.name] = p.ops;
  }
  return r;
}

namespace {

GraphFigures figures(const cost::GraphCost& c) {
  return {c.kernels, c.flops, c.bytes_moved, c.seconds};
}

}  // namespace

FusionReport run_pipeline(Graph& g, const PipelineOptions& opts) {
  FusionReport report;
  PassContext ctx{report};
  ctx.target = opts.target;
  std::string source = "given";
  ctx.machine = opts.machine ? *opts.machine : cost::estimate_machine(&source);
  report.peak_gflops = ctx.machine.flops_per_s / 1e9;
  report.bandwidth_gbps = ctx.machine.bytes_per_s / 1e9;
  report.launch_us = ctx.machine.launch_s * 1e6;
  report.machine_source = source;
  report.before = figures(cost::graph_cost(g, ctx.machine));
  const std::map<std::string, OriginalCost> originals = original_costs(g, ctx.machine);
  int index = 0;
  bool rules_done = false;
  auto dump = [&](const std::string& after) {
    if (opts.dump_format.empty()) return;
    std::filesystem::create_directories(opts.dump_dir.empty() ? "." : opts.dump_dir);
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02d_", index);
    std::string file = (std::filesystem::path(opts.dump_dir.empty() ? "." : opts.dump_dir) /
                        (prefix + after + "." + opts.dump_format))
                           .string();
    dump_graph(g, opts.dump_format, file);
  };
  dump("imported");
  const std::vector<std::unique_ptr<Pass>>& passes = pipeline();
  // On a terminal, the pass running now: "fusing: pass 23/38 LayerNormFusionPass  1.2 s".
  Progress progress("fusing: pass", static_cast<int64_t>(passes.size()));
  progress.keep_ticking();
  for (const auto& pass : passes) {
    ++index;
    const PassInfo& info = pass->info();
    progress.update(index, info.name);
    if (info.fusion && !rules_done) {
      // User rules before the built-in fusions (whether those are on or off): what a user asked
      // for takes precedence.
      rules_done = true;
      if (opts.switches && !opts.switches->user_rules().empty()) {
        run_user_rules(g, opts.switches->user_rules(), ctx);
        dump("user_rules");
      }
      if (!fusion_patterns().empty()) {
        run_fusion_patterns(g, ctx, [&](const std::string& name) {
          return !opts.switches || opts.switches->enabled(user_pattern_info(name));
        });
        dump("fusion_patterns");
      }
    }
    bool on = opts.switches ? opts.switches->enabled(info) : info.default_on;
    if (!on) continue;
    if (info.fusion) report.record(info.name);  // listed even with no match
    pass->run(g, ctx);
#ifndef NDEBUG
    verify_graph(g);
#endif
    dump(info.name);
  }
  settle_fusion_records(g, report, originals, ctx.machine);
  report.after = figures(cost::graph_cost(g, ctx.machine));
  report.warnings = overfusion_warnings(g, l2_cache_bytes(), vector_registers());
  return report;
}

}  // namespace nnfuse
