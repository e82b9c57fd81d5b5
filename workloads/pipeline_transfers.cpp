#include "workloads/pipeline_transfers.hpp"

#include <utility>

namespace stepsim::workloads {

namespace {

OpLabel transfer_label(const StagePass& pass) {
  if (pass.forward) return {OpName::kPpActivation, Phase::kForward, kNoLayer};
  return {OpName::kPpGradient, Phase::kBackward, kNoLayer};
}

}  // namespace

PipelineTransfers::PipelineTransfers(OpGraphBuilder& graph, std::int64_t bytes)
    : graph_(graph), bytes_(bytes) {}

OpIndex PipelineTransfers::receive(const StagePass& pass) {
  // A forward receives from upstream, a backward from downstream.
  const int peer = pass.forward ? -pass.downstream : pass.downstream;
  return graph_.add_receive(transfer_label(pass), Communicator::kPipeline, peer, bytes_,
                            pass.receive_tag(), {}, pass.downstream < 0);
}

OpIndex PipelineTransfers::send(const StagePass& pass, const Frontier& out, OpIndex after) {
  const int peer = pass.forward ? pass.downstream : -pass.downstream;
  return graph_.add_send(transfer_label(pass), Communicator::kPipeline, peer, bytes_,
                         pass.send_tag(), {out.main, out.side, after}, pass.downstream < 0);
}

std::optional<PipelineTransfers::HeldSend> PipelineTransfers::take_held() {
  return std::exchange(held_, std::nullopt);
}

void PipelineTransfers::send_held(const HeldSend& held, OpIndex after) {
  graph_.set_pass(held.pass.micro_batch, held.pass.chunk);
  send(held.pass, held.out, after);
}

}  // namespace stepsim::workloads
