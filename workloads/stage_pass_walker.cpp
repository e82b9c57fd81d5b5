#include "workloads/stage_pass_walker.hpp"

#include <optional>
#include <stdexcept>
#include <utility>

namespace stepsim::workloads {

namespace {

// The tokens the output layer projects: an inference server's logit tokens, when set.
MicroBatchShape head_shape_of(const MicroBatchShape& shape, const ForwardPass* forward) {
  MicroBatchShape head = shape;
  if (forward != nullptr && forward->logit_tokens > 0) {
    head.tokens = forward->logit_tokens;
    head.sharded_tokens = forward->logit_tokens;
  }
  return head;
}

}  // namespace

StagePassWalker::StagePassWalker(const WorkloadSpec& spec, int stage)
    : StagePassWalker(spec, stage, micro_batch_shape(spec), nullptr) {}

StagePassWalker::StagePassWalker(const WorkloadSpec& spec, const ForwardPass& forward)
    : StagePassWalker(spec, 0, forward.shape, &forward) {}

StagePassWalker::StagePassWalker(const WorkloadSpec& spec, int stage, const MicroBatchShape& shape,
                                 const ForwardPass* forward)
    : spec_(spec),
      stage_(stage),
      shape_(shape),
      head_shape_(head_shape_of(shape, forward)),
      compute_(spec, graph_, forward != nullptr),
      figures_(spec, shape, forward ? forward->kv_cache_bytes_per_layer : 0,
               forward ? forward->attention_core_flops_per_layer : -1),
      gradients_(spec, stage, shape.element_bytes, graph_, compute_),
      zero3_(spec, graph_),
      // A tensor-parallel collective's buffer: b x s' x h elements.
      tensor_(make_tensor_parallel_comm(spec.parallel, graph_,
                                        shape.tokens * spec.model.hidden * shape.element_bytes)),
      attention_(spec, shape, graph_, compute_),
      experts_(spec, shape, graph_, compute_, gradients_),
      layers_(spec, shape,
              {graph_, compute_, figures_, *tensor_, attention_, experts_, gradients_, zero3_}),
      ends_(spec, shape, head_shape_, forward == nullptr, compute_, *tensor_, gradients_, zero3_),
      // A pipeline transfer: the sequence-sharded tensor.
      transfers_(graph_, shape.sharded_tokens * spec.model.hidden * shape.element_bytes) {}

void StagePassWalker::gather_at_start(std::vector<ClosedBucket> buckets) {
  gradients_.gather_at_start(std::move(buckets));
}

Program StagePassWalker::run() {
  start_gate_ = gradients_.issue_start_gathers();
  const std::vector<StagePass> passes = pipeline_walk(spec_, stage_);
  for (std::size_t i = 0; i < passes.size(); ++i) {
    const StagePass& pass = passes[i];
    std::optional<PipelineTransfers::HeldSend> held = transfers_.take_held();
    if (!held && i + 1 < passes.size() && interleaves(pass, passes[i + 1])) {
      forward_backward_pair(pass, passes[i + 1]);
      ++i;
      continue;
    }
    if (pass.weights_only) {
      weight_pass(pass);
    } else if (pass.forward) {
      forward_pass(pass);
    } else {
      backward_pass(pass);
    }
    // DualPipe: the held forward output leaves once this pass has computed too.
    if (held) transfers_.send_held(*held, pass_end_);
  }
  if (transfers_.holding())
    throw std::logic_error("step generator bug: a send held past the last pass");
  gradients_.check_weights_done();
  gradients_.optimizer_step();
  return graph_.take_program();
}

// One pass over every layer of the single stage, with no loss and no optimizer.
Program StagePassWalker::run_forward() {
  StagePass pass;
  pass.layer_begin = 0;
  pass.layer_end = spec_.model.layers;
  forward_pass(pass);
  return graph_.take_program();
}

void StagePassWalker::begin_pass(const StagePass& pass) {
  graph_.set_pass(pass.micro_batch, pass.chunk);
  zero3_.begin_pass();
}

// The receive or the embedding; the step's first forward also waits for its first parameter
// gather.
Frontier StagePassWalker::open_forward(const StagePass& pass) {
  graph_.set_pass(pass.micro_batch, pass.chunk);
  Frontier cur;
  if (pass.receives()) {
    cur.main = transfers_.receive(pass);
  } else {
    cur = ends_.embedding_forward();
  }
  if (start_gate_ != kNoOp) cur.side = std::exchange(start_gate_, kNoOp);
  return cur;
}

Frontier StagePassWalker::open_backward(const StagePass& pass) {
  graph_.set_pass(pass.micro_batch, pass.chunk);
  if (pass.receives()) return {transfers_.receive(pass), kNoOp};
  return ends_.head_backward();
}

// The forward layers [from, layer_end) of `pass`, then the output layer on the last stage.
Frontier StagePassWalker::finish_forward(const StagePass& pass, std::int64_t from, Frontier cur) {
  graph_.set_pass(pass.micro_batch, pass.chunk);
  for (std::int64_t layer = from; layer < pass.layer_end; ++layer)
    cur = layers_.forward(pass, layer, Phase::kForward, cur);
  if (!pass.sends()) ends_.head_forward(cur);
  return cur;
}

// The backward layers from `from` down to layer_begin, then the embedding on the first stage.
Frontier StagePassWalker::finish_backward(const StagePass& pass, std::int64_t from, Frontier cur) {
  graph_.set_pass(pass.micro_batch, pass.chunk);
  for (std::int64_t layer = from; layer >= pass.layer_begin; --layer)
    cur = layers_.backward(pass, layer, cur);
  if (!pass.sends()) ends_.embedding_backward(cur);
  return cur;
}

void StagePassWalker::forward_pass(const StagePass& pass) {
  begin_pass(pass);
  const Frontier cur = finish_forward(pass, pass.layer_begin, open_forward(pass));
  pass_end_ = graph_.last_op();
  if (!pass.sends()) return;
  if (pass.send_after_next) {
    transfers_.hold(pass, cur);
  } else {
    transfers_.send(pass, cur);
  }
}

void StagePassWalker::backward_pass(const StagePass& pass) {
  begin_pass(pass);
  gradients_.begin_backward(pass);
  const Frontier cur = finish_backward(pass, pass.layer_end - 1, open_backward(pass));
  pass_end_ = graph_.last_op();
  if (pass.sends()) transfers_.send(pass, cur);
  gradients_.end_backward(graph_.last_op());
}

// DualPipe's weight step: the weight gradients a deferring backward left.
void StagePassWalker::weight_pass(const StagePass& pass) {
  begin_pass(pass);
  gradients_.weight_pass(pass);
  pass_end_ = graph_.last_op();
}

// Whether `forward` and `backward` form one of DualPipe's overlapped forward-and-backward chunks
// that dualpipe_overlap interleaves. Under ZeRO-3 the pair stays sequential: its parameter
// gathers follow one pass at a time.
bool StagePassWalker::interleaves(const StagePass& forward, const StagePass& backward) const {
  const ParallelLayout& layout = spec_.parallel;
  return layout.schedule == PipelineSchedule::kDualPipe && layout.dualpipe_overlap &&
         layout.zero != 3 && forward.forward && forward.overlapped && !forward.weights_only &&
         !backward.forward && !backward.weights_only && !backward.defers_weights;
}

// DualPipe's overlapped forward and backward chunks (dualpipe.py's _forward_backward_chunk),
// interleaved as figure 4 of the report orders them. The forward's layers are paired with the
// backward's, first with first; in each pair of layers the compute stream runs
//   attention (F) | MLP (B) | MLP (F) | attention (B)
// while the expert stream runs, beside them,
//   combine (B)   | dispatch (F) | dispatch (B) | combine (F),
// each all-to-all beside the other chunk's compute. With constant pieces and all-to-alls of c
// each, a pair of MoE layers takes max(attention F, c) + max(MLP B, c) + max(MLP F, c) +
// max(attention B, c) (tests/executor). Layers left over when the chunks differ in length run
// after, one chunk at a time. The compute of a pair of layers with an all-to-all runs with the
// SMs the communication leaves (dualpipe_comm_sm_share). The forward's output leaves with the
// backward's, after both (its pass is send_after_next).
void StagePassWalker::forward_backward_pair(const StagePass& f, const StagePass& b) {
  begin_pass(b);
  gradients_.begin_backward(b);
  Frontier fcur = open_forward(f);
  Frontier bcur = open_backward(b);
  std::int64_t fl = f.layer_begin;
  std::int64_t bl = b.layer_end - 1;
  const ModelSpec& model = spec_.model;
  for (; fl < f.layer_end && bl >= b.layer_begin; ++fl, --bl) {
    compute_.set_beside_all_to_all(spec_.parallel.ep > 1 &&
                                   (model.is_moe_layer(fl) || model.is_moe_layer(bl)));
    TransformerLayerEmitter::BackwardState bs = layers_.backward_begin(b, bl, bcur);
    const TransformerLayerEmitter::ForwardState fs =
        layers_.forward_attention(f, fl, Phase::kForward, fcur);
    layers_.backward_mlp(bs);
    fcur = layers_.forward_mlp(fs);
    bcur = layers_.backward_attention(bs);
  }
  compute_.set_beside_all_to_all(false);
  fcur = finish_forward(f, fl, fcur);
  bcur = finish_backward(b, bl, bcur);
  pass_end_ = graph_.last_op();
  if (b.sends()) transfers_.send(b, bcur);
  gradients_.end_backward(graph_.last_op());
  if (f.sends()) transfers_.send_held({f, fcur}, pass_end_);
}

}  // namespace stepsim::workloads
