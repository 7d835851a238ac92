// THE pipeline: every pass nnfuse runs, in its phase, with the order each needs and why.
#include "passes/pipeline.h"

#include "cost/machine.h"
#include "ir/buffer_pool.h"
#include "ops/user_pattern.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/canonicalize/canonicalize.h"
#include "passes/fusions/fusions.h"
#include "passes/overfusion.h"
#include "passes/pass_observers.h"
#include "passes/user_phase.h"

namespace nnfuse {

namespace {

// Appends a phase to `phases` and returns it, for its passes to be added.
Phase& phase(std::vector<Phase>& phases, std::string name, std::string purpose,
             std::vector<Order> order = {}) {
  phases.push_back({std::move(name), std::move(purpose), {}, std::move(order)});
  return phases.back();
}

void add(Phase& ph, std::unique_ptr<Pass> pass, std::vector<Order> order = {}) {
  ph.passes.push_back({std::move(pass), std::move(order)});
}

// The built-in fusions' phases, in order.
std::vector<std::string> fusion_phases() {
  return {"normalizations", "convolutions", "dense", "layout", "automatic"};
}

void canonicalize_phase(std::vector<Phase>& phases) {
  std::vector<std::string> later = fusion_phases();
  later.insert(later.begin(), "user");
  Phase& p = phase(phases, "canonicalize", "exporter noise out, constants and static shapes folded",
                   {runs_before(later,
                                "the fusions match the canonical graph: exporter noise out, "
                                "constants and static shapes folded")});
  add(p, make_identity_elimination_pass());
  add(p, make_shape_folding_pass());
  add(p, make_constant_folding_pass());
  add(p, make_einsum_lowering_pass(),
      {runs_after({"ShapeFoldingPass", "ConstantFoldingPass"},
                  "an Einsum is lowered where its shapes are static, once folding made them so"),
       runs_before({"dense"}, "the dense-layer fusions look for the MatMuls it makes")});
  add(p, make_transpose_gather_pass());
}

void user_phase(std::vector<Phase>& phases) {
  Phase& p = phase(phases, "user", "the fusions a user asked for (switch file rules, patterns)",
                   {runs_before(fusion_phases(),
                                "what a user asked for takes precedence over the built-in "
                                "fusions, whether those are on or off")});
  p.listed = false;
  add(p, make_user_rules_pass());
  add(p, make_user_patterns_pass());
}

void normalization_phase(std::vector<Phase>& phases) {
  Phase& p = phase(phases, "normalizations", "transformer, group and embedding normalizations");
  const Order before_absorbers =
      runs_before({"convolutions", "dense", "automatic"},
                  "the normalization is matched whole, before anything absorbs its Adds and Muls");
  add(p, make_layer_norm_pass(), {before_absorbers});
  add(p, make_rms_norm_pass(), {before_absorbers});
  add(p, make_group_norm_pass(),
      {runs_after({"LayerNormFusionPass"},
                  "a group norm written out as mean and variance is matched as the "
                  "LayerNormalization of the group view that LayerNormFusionPass makes"),
       runs_before({"GeluFusionPass"}, "the SiLU after the norm is its epilogue, not a Swish"),
       runs_before({"AutoFusionPass"},
                   "the norm's Mul and Add are its own, not a generated kernel's")});
  add(p, make_response_norm_pass(), {before_absorbers});
  add(p, make_embed_layer_norm_pass(),
      {runs_after({"LayerNormFusionPass"},
                  "it takes the LayerNormalization that LayerNormFusionPass makes"),
       runs_before({"SkipLayerNormFusionPass"},
                   "SkipLayerNormFusionPass would take the embeddings' last Add")});
}

void convolution_phase(std::vector<Phase>& phases) {
  Phase& p = phase(phases, "convolutions",
                   "CNN fusions: pads, BatchNorms, conv epilogues, squeeze-and-excitation, "
                   "conv pairs");
  const std::vector<std::string> epilogues = {"ConvAddFusionPass", "ConvActivationFusionPass"};
  const Order after_epilogues =
      runs_after(epilogues, "it reads a FusedConv with its epilogue (residual Add, activation)");
  const Order after_plain_readers =
      runs_after({"ConvMaxPoolFusionPass", "SqueezeExciteFusionPass", "ScaledConvFusionPass"},
                 "the passes that read a FusedConv's plain form run first");
  add(p, make_pad_conv_pass(),
      {runs_before(epilogues,
                   "it folds a Pad into a plain Conv, which the conv epilogues make a "
                   "FusedConv")});
  add(p, make_pad_pool_pass());
  add(p, make_channel_shuffle_pass());
  add(p, make_conv_bn_pass(),
      {runs_before(epilogues, "BatchNorm goes into the conv's weights first, then the epilogues")});
  add(p, make_conv_add_act_pass(),
      {runs_before({"ConvActivationFusionPass"},
                   "the largest epilogue first: the residual Add with the activation after it")});
  add(p, make_conv_act_pass());
  add(p, make_bn_scale_shift_pass(),
      {runs_after({"ConvBatchnormFusionPass"},
                  "a BatchNorm becomes a ScaleShift only when no conv took it")});
  add(p, make_concat_scale_shift_pass(),
      {runs_after({"BatchNormScaleShiftPass"},
                  "it takes the ScaleShift of a Concat that BatchNormScaleShiftPass makes")});
  add(p, make_conv_pool_pass(), {after_epilogues});
  add(p, make_squeeze_excite_pass(), {after_epilogues});
  add(p, make_scaled_conv_pass(),
      {after_epilogues,
       runs_after({"SqueezeExciteFusionPass"},
                  "the block's scale is one kernel first, then the scale goes into the "
                  "projection conv")});
  add(p, make_squeeze_excite_scale_pass(),
      {runs_after({"SqueezeExciteFusionPass"}, "it extends the SqueezeExcite node"),
       runs_after({"ScaledConvFusionPass"},
                  "the Mul by the scale goes into the scale's kernel only where no projection "
                  "conv took the scale")});
  add(p, make_conv_skip_conv_pass(),
      {runs_after({"ConvAddFusionPass"}, "it takes the conv of the residual Add's FusedConv"),
       after_plain_readers});
  add(p, make_horizontal_conv_pass(),
      {runs_after({"ConvActivationFusionPass"},
                  "the convs it joins share their activation, which must be in them"),
       runs_after({"ConvMaxPoolFusionPass", "SqueezeExciteFusionPass", "ScaledConvFusionPass",
                   "ConvSkipConvFusionPass"},
                  "the passes that read a FusedConv run first: the joined convs are no longer "
                  "FusedConvs")});
  add(p, make_expand_depthwise_pass(),
      {after_epilogues, after_plain_readers,
       runs_after({"ConvSkipConvFusionPass", "HorizontalConvFusionPass"},
                  "the passes that read a FusedConv's plain form run first: the pair is no "
                  "longer two FusedConvs")});
  add(p, make_conv_quantize_pass(),
      {after_epilogues, after_plain_readers,
       runs_after(
           {"ConvSkipConvFusionPass", "HorizontalConvFusionPass", "ExpandDepthwiseFusionPass"},
           "the quantization after a conv is its last epilogue: every other conv fusion "
           "sees the conv as the model writes it")});
}

void dense_phase(std::vector<Phase>& phases) {
  Phase& p = phase(phases, "dense", "dense layers and transformer blocks");
  const std::string bias = "MatMulBiasAddFusionPass";
  add(p, make_pool_gemm_pass(),
      {runs_before({"GemmActivationFusionPass", bias},
                   "the classifier head first (it absorbs its Gemm), then the Gemm/MatMul "
                   "epilogues")});
  add(p, make_matmul_add_act_pass());
  add(p, make_quant_dense_pass(),
      {runs_before({"SkipLayerNormFusionPass", "MatMulResidualFusionPass"},
                   "a quantized dense layer takes its bias Add before a residual fusion can")});
  add(p, make_gemm_act_pass());
  add(p, make_attention_pass(),
      {runs_after({bias}, "attention is matched once its projections are FusedMatMuls")});
  add(p, make_qkv_projection_pass(),
      {runs_after({"AttentionFusionPass"},
                  "the projections become one where they feed a fused attention")});
  add(p, make_gelu_pass(),
      {runs_after({bias, "GemmActivationFusionPass"},
                  "a GELU or Swish becomes a node of its own only where no dense layer took it "
                  "as its epilogue")});
  const Order gate = runs_after({bias, "GeluFusionPass"},
                                "the gate's activation is its FusedMatMul's epilogue or a Gelu "
                                "or Swish node of its own");
  add(p, make_gated_ffn_pass(), {gate});
  add(p, make_gated_ffn_chunk_pass(), {gate});
  add(p, make_layer_norm_matmul_pass(),
      {runs_after({bias, "GatedFFNFusionPass", "GatedFFNChunkFusionPass"},
                  "the norm goes into the dense layer that alone reads it, the gated one "
                  "included"),
       runs_before({"SkipLayerNormFusionPass", "MatMulSkipLayerNormFusionPass"},
                   "in a pre-norm block the residual Add then goes into the dense layer before "
                   "and the norm into the one after: two kernels, not three")});
  add(p, make_skip_layer_norm_pass(),
      {runs_after({bias},
                  "the residual Add + LayerNorm is matched once the dense layers' bias Adds "
                  "are in their MatMuls")});
  add(p, make_matmul_layer_norm_pass(),
      {runs_after({bias, "SkipLayerNormFusionPass"},
                  "it takes the SkipLayerNorm of a FusedMatMul")});
  add(p, make_matmul_residual_pass(),
      {runs_after({"SkipLayerNormFusionPass", "MatMulSkipLayerNormFusionPass"},
                  "it takes the residual Adds after dense layers that no LayerNorm fusion "
                  "took")});
  add(p, make_layer_scale_pass(),
      {runs_after({bias}, "it folds the scale into a FusedMatMul's weights")});
}

std::vector<Phase> make_pipeline() {
  std::vector<Phase> phases;
  canonicalize_phase(phases);
  user_phase(phases);
  normalization_phase(phases);
  convolution_phase(phases);
  dense_phase(phases);
  add(phase(phases, "layout", "feature maps flattened to tokens and back, as views on NHWC"),
      make_spatial_view_pass());
  std::vector<std::string> earlier = fusion_phases();
  earlier.pop_back();
  add(phase(phases, "automatic", "generated kernels for whatever cheap ops are left",
            {runs_after(earlier, "it takes whatever cheap ops the built-in fusions left")}),
      make_auto_fusion_pass());
  check_phases(phases);
  return phases;
}

}  // namespace

const std::vector<Phase>& pipeline() {
  static const std::vector<Phase> phases = make_pipeline();
  return phases;
}

std::vector<PassInfo> list_passes() {
  std::vector<PassInfo> r;
  for (const auto& p : fusion_patterns()) r.push_back(user_pattern_info(p->name));
  for (const Phase& phase : pipeline()) {
    if (!phase.listed) continue;
    for (const PhasePass& p : phase.passes) r.push_back(p.pass->info());
  }
  return r;
}

std::map<std::string, std::vector<std::string>> pass_op_lists() {
  std::map<std::string, std::vector<std::string>> r;
  for (const PassInfo& p : list_passes()) {
    if (!p.ops.empty()) r[p.name] = p.ops;
  }
  return r;
}

FusionReport run_pipeline(Graph& g, const PipelineOptions& opts) {
  // What the passes let go of is weights they replaced (ir/buffer_pool.h).
  const ScopedPoolBypass bypass;
  FusionReport report;
  PassContext ctx{report};
  ctx.target = opts.target;
  ctx.switches = opts.switches;
  std::string source = "given";
  ctx.machine = opts.machine ? *opts.machine : cost::estimate_machine(&source);
  const std::vector<Phase>& phases = pipeline();
  int64_t listed = 0;
  for (const Phase& phase : phases) {
    if (phase.listed) listed += static_cast<int64_t>(phase.passes.size());
  }
  // In this order: the graph is verified before it is dumped, and the progress line appears
  // once the imported graph is dumped.
  CostObserver costs(report, ctx.machine, source);
  std::vector<PassObserver*> observers = {&costs};
#ifndef NDEBUG
  VerifyObserver verify;
  observers.push_back(&verify);
#endif
  std::optional<DumpObserver> dump;
  if (!opts.dump_format.empty()) {
    observers.push_back(&dump.emplace(opts.dump_format, opts.dump_dir));
  }
  ProgressObserver progress(listed);
  observers.push_back(&progress);
  run_phases(phases, g, ctx, observers);
  report.warnings = overfusion_warnings(g, l2_cache_bytes(), vector_registers());
  return report;
}

}  // namespace nnfuse
