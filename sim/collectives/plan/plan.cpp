#include "sim/collectives/plan/plan.hpp"

#include <stdexcept>

namespace stepsim::collectives {

Bytes Plan::total_bytes() const {
  Bytes total;
  for (const auto& t : transfers_)
    if (!t.is_join()) total += t.bytes;
  return total;
}

std::vector<Bytes> Plan::bytes_sent(std::size_t members) const {
  std::vector<Bytes> sent(members);
  for (const auto& t : transfers_)
    if (!t.is_join() && !t.src.is_switch()) sent[t.src.member_index()] += t.bytes;
  return sent;
}

std::vector<Bytes> Plan::bytes_received(std::size_t members) const {
  std::vector<Bytes> received(members);
  for (const auto& t : transfers_)
    if (!t.is_join() && !t.dst.is_switch()) received[t.dst.member_index()] += t.bytes;
  return received;
}

TransferId PlanBuilder::add(const Transfer& transfer, std::span<const TransferId> deps) {
  const TransferId id(static_cast<std::uint32_t>(plan_.transfers_.size()));
  for (TransferId dep : deps)
    if (dep >= id) throw std::logic_error("PlanBuilder::add: dependency on a later transfer (bug)");
  if (transfer.bytes.count() < 0) throw std::logic_error("PlanBuilder::add: negative bytes (bug)");
  plan_.transfers_.push_back(transfer);
  plan_.deps_.insert(plan_.deps_.end(), deps.begin(), deps.end());
  plan_.offsets_.push_back(static_cast<std::uint32_t>(plan_.deps_.size()));
  return id;
}

TransferId PlanBuilder::join(std::uint32_t member, std::span<const TransferId> deps, Time latency) {
  return add({Endpoint::member(member), Endpoint::member(member), Bytes(0), latency, 0}, deps);
}

void PlanBuilder::reserve(std::size_t transfers, std::size_t deps) {
  plan_.transfers_.reserve(transfers);
  plan_.offsets_.reserve(transfers + 1);
  plan_.deps_.reserve(deps);
}

Reduction member_reduction(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter ||
                 kind == CollectiveKind::kReduce
             ? Reduction::kByMembers
             : Reduction::kNone;
}

Plan PlanBuilder::finish(Reduction reduction) && {
  plan_.reduction_ = reduction;
  // Counting sort of the dependency edges by their source gives the reverse CSR in id order,
  // so the runner releases dependents deterministically.
  const std::size_t n = plan_.transfers_.size();
  plan_.roffsets_.assign(n + 1, 0);
  for (TransferId dep : plan_.deps_)
    ++plan_.roffsets_[dep.value() + 1];
  for (std::size_t i = 0; i < n; ++i)
    plan_.roffsets_[i + 1] += plan_.roffsets_[i];
  plan_.rdeps_.resize(plan_.deps_.size());
  std::vector<std::uint32_t> cursor(plan_.roffsets_.begin(), plan_.roffsets_.end() - 1);
  for (std::size_t t = 0; t < n; ++t)
    for (std::uint32_t k = plan_.offsets_[t]; k < plan_.offsets_[t + 1]; ++k)
      plan_.rdeps_[cursor[plan_.deps_[k].value()]++] = TransferId(static_cast<std::uint32_t>(t));
  for (const Transfer& t : plan_.transfers_)
    if (t.rate_ceiling.value() > 0) plan_.has_transfer_ceilings_ = true;
  return std::move(plan_);
}

void Plan::limit_transfer(TransferId id, BytesPerSecond ceiling, Time extra) {
  Transfer& t = transfers_.at(id.value());
  t.rate_ceiling = ceiling;
  t.extra_latency += extra;
  if (ceiling.value() > 0) has_transfer_ceilings_ = true;
}

void Frontier::set_all(PlanBuilder& builder, std::uint32_t member,
                       std::span<const TransferId> ids) {
  if (ids.empty()) return;
  ready_[member] = ids.size() == 1 ? ids[0] : builder.join(member, ids);
}

}  // namespace stepsim::collectives
