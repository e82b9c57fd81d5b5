#include "sim/search/report_codec.hpp"

#include "sim/search/byte_codec.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace stepsim::search {

std::string encode_report(const StepReport& r) {
  ByteWriter w;
  w.text(r.scenario);
  w.text(r.topology);
  w.text(r.model);
  w.text(r.layout);
  w.raw<std::int32_t>(r.world_size);
  w.raw(r.idle_tolerance);
  w.time(r.step_time);
  w.raw(r.tokens_per_step);
  w.raw(r.samples_per_step);
  w.raw(r.tokens_per_s);
  w.raw(r.samples_per_s);
  w.raw(r.model_flops_per_step);
  w.raw(r.tflops_per_accelerator);
  w.raw(r.peak_tflops);
  w.raw(r.mfu);
  w.raw<std::uint64_t>(r.breakdowns.size());
  for (const auto& b : r.breakdowns) {
    w.text(b.label);
    w.raw<std::int32_t>(b.parts.rank);
    w.time(b.parts.compute);
    for (const Time t : b.parts.exposed)
      w.time(t);
    w.time(b.parts.bubble);
    w.time(b.parts.wait);
    w.time(b.parts.idle);
  }
  w.raw<std::uint64_t>(r.dimensions.size());
  for (const auto& d : r.dimensions) {
    w.text(d.name);
    w.raw(d.operations_per_rank);
    w.raw(d.payload_bytes_per_rank);
    w.raw(d.wire_bytes_per_rank);
    w.time(d.exposed);
  }
  w.raw<std::uint64_t>(r.busiest_links.size());
  for (const auto& l : r.busiest_links) {
    w.text(l.name);
    w.text(l.link_class);
    w.raw(l.bandwidth.value());
    w.raw(l.utilization);
    w.raw(l.bytes_carried);
    w.raw(l.peak_flows);
  }
  w.raw<std::uint64_t>(r.memory.size());
  for (const auto& m : r.memory) {
    w.raw<std::int32_t>(m.stage);
    w.bytes(m.parameters);
    w.bytes(m.gradients);
    w.bytes(m.optimizer_states);
    w.bytes(m.activations);
    w.bytes(m.total);
    w.bytes(m.capacity);
    w.raw(m.peak_in_flight_micro_batches);
    w.raw<std::uint8_t>(m.exceeds_capacity ? 1 : 0);
    w.text(m.warning);
  }
  w.raw(r.operations);
  w.raw(r.flows);
  w.raw(r.events);
  w.raw(r.solves);
  w.raw(r.classes_solved);
  w.raw(r.boundary_expansions);
  w.raw(r.twin_classes);
  const std::vector<std::uint8_t> cbor = nlohmann::ordered_json::to_cbor(r.resolved_scenario);
  w.text(std::string_view(reinterpret_cast<const char*>(cbor.data()), cbor.size()));
  return w.take();
}

StepReport decode_report(std::string_view bytes) {
  ByteReader in(bytes);
  StepReport r;
  r.scenario = in.text();
  r.topology = in.text();
  r.model = in.text();
  r.layout = in.text();
  r.world_size = in.raw<std::int32_t>();
  r.idle_tolerance = in.raw<double>();
  r.step_time = in.time();
  r.tokens_per_step = in.raw<std::int64_t>();
  r.samples_per_step = in.raw<std::int64_t>();
  r.tokens_per_s = in.raw<double>();
  r.samples_per_s = in.raw<double>();
  r.model_flops_per_step = in.raw<double>();
  r.tflops_per_accelerator = in.raw<double>();
  r.peak_tflops = in.raw<double>();
  r.mfu = in.raw<double>();
  r.breakdowns.resize(in.count());
  for (auto& b : r.breakdowns) {
    b.label = in.text();
    b.parts.rank = in.raw<std::int32_t>();
    b.parts.compute = in.time();
    for (Time& t : b.parts.exposed)
      t = in.time();
    b.parts.bubble = in.time();
    b.parts.wait = in.time();
    b.parts.idle = in.time();
  }
  r.dimensions.resize(in.count());
  for (auto& d : r.dimensions) {
    d.name = in.text();
    d.operations_per_rank = in.raw<std::int64_t>();
    d.payload_bytes_per_rank = in.raw<double>();
    d.wire_bytes_per_rank = in.raw<double>();
    d.exposed = in.time();
  }
  r.busiest_links.resize(in.count());
  for (auto& l : r.busiest_links) {
    l.name = in.text();
    l.link_class = in.text();
    l.bandwidth = BytesPerSecond(in.raw<double>());
    l.utilization = in.raw<double>();
    l.bytes_carried = in.raw<double>();
    l.peak_flows = in.raw<std::uint32_t>();
  }
  r.memory.resize(in.count());
  for (auto& m : r.memory) {
    m.stage = in.raw<std::int32_t>();
    m.parameters = in.bytes();
    m.gradients = in.bytes();
    m.optimizer_states = in.bytes();
    m.activations = in.bytes();
    m.total = in.bytes();
    m.capacity = in.bytes();
    m.peak_in_flight_micro_batches = in.raw<double>();
    m.exceeds_capacity = in.raw<std::uint8_t>() != 0;
    m.warning = in.text();
  }
  r.operations = in.raw<std::uint64_t>();
  r.flows = in.raw<std::uint64_t>();
  r.events = in.raw<std::uint64_t>();
  r.solves = in.raw<std::uint64_t>();
  r.classes_solved = in.raw<std::uint64_t>();
  r.boundary_expansions = in.raw<std::uint64_t>();
  r.twin_classes = in.raw<std::uint64_t>();
  const std::string cbor = in.text();
  in.finish();
  r.resolved_scenario = nlohmann::ordered_json::from_cbor(cbor.begin(), cbor.end());
  return r;
}

}  // namespace stepsim::search
