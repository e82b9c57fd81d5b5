// The pipeline's point-to-point transfers of a generated step: each pass (pipeline_walk.hpp)
// opens with a receive from its neighbouring virtual stage and closes with a send to the other,
// unless it is at an end of the model. A forward pass receives the activation from the previous
// virtual stage and sends its output to the next; a backward pass receives the output gradient
// from the next and sends the input gradient to the previous. Each transfer is the sequence-
// sharded b x s' x h tensor (`bytes`), tagged per micro-batch, boundary and direction, on the
// pipeline communicator (DualPipe's second direction on its reverse streams).
#pragma once

#include <cstdint>
#include <optional>

#include "workloads/frontier.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/pipeline_walk.hpp"

namespace stepsim::workloads {

class PipelineTransfers {
 public:
  // Adds transfers of `bytes` to `graph`, which must outlive it.
  PipelineTransfers(OpGraphBuilder& graph, std::int64_t bytes);

  // The receive that opens `pass` (which must receive: StagePass::receives()).
  OpIndex receive(const StagePass& pass);
  // The send that closes `pass` (which must send), after `out` and `after` (kNoOp: nothing).
  OpIndex send(const StagePass& pass, const Frontier& out, OpIndex after = kNoOp);

  // DualPipe: a forward's output sent after the pass that follows it (dualpipe.py sends the
  // outputs of an overlapped forward and backward together, after both).
  struct HeldSend {
    StagePass pass;
    Frontier out;
  };
  void hold(const StagePass& pass, const Frontier& out) { held_ = HeldSend{pass, out}; }
  // The send held, if any; nothing is held after.
  std::optional<HeldSend> take_held();
  bool holding() const { return held_.has_value(); }
  // Sends `held` after `after`, labelled with its pass.
  void send_held(const HeldSend& held, OpIndex after);

 private:
  OpGraphBuilder& graph_;
  std::int64_t bytes_ = 0;
  std::optional<HeldSend> held_;
};

}  // namespace stepsim::workloads
