// Internal to the flow network (not for its users): the tables of links and flow classes that the
// flow network keeps and the incremental max-min solve reads. See flow_network.hpp for the model.
//
// A flow class is the set of active (sub-)flows on one identical link sequence (and, sprayed, the
// same shares): max-min gives them equal rates (bytes/s per flow), so everything is solved per
// class. A class's fields are split in three by use. What the component search, the boundary sums
// and the local problem read for every class they visit (often thousands per solve, in an order
// that defeats the caches) is one cache line, ClassHot, path included when it is short; what a rate
// change and the drain queue need is ClassDrain (half a line); the rest, read when flows start or
// finish, is FlowClass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::engine::detail {

inline constexpr std::uint32_t kNone = 0xffffffffu;
// A link counts as saturated (the component search crosses it; a boundary link that reaches it
// joins the search) from this relative margin below its capacity. Crossing a link that is not
// saturated is never wrong, only slower, so the margin is generous.
inline constexpr double kSaturatedMargin = 1e-7;
inline bool saturated(double load, double capacity) {
  return load >= capacity * (1.0 - kSaturatedMargin);
}

// The loops over classes read one random cache line per class and little else, so they wait on
// memory; they ask for the line of the class this many places ahead (in their list) early.
inline constexpr std::size_t kPrefetchAhead = 8;
inline void prefetch(const void* address) {
  __builtin_prefetch(address);
}

inline constexpr std::size_t kInlinePath = 9;  // fills ClassHot's cache line, with the cap
// Set in ClassHot::path_size for a sprayed class: its links are in FlowClass::long_path (at any
// length) and their shares in FlowClass::shares.
inline constexpr std::uint32_t kSprayedBit = 0x80000000u;
// Set in ClassHot::path_size for a class whose flows each have a rate cap of their own
// (ClassHot::rate_cap). The low bits hold the path's length.
inline constexpr std::uint32_t kCappedBit = 0x40000000u;
inline constexpr std::uint32_t kPathLengthMask = 0x3fffffffu;
// No rate cap.
inline constexpr double kNoCap = std::numeric_limits<double>::infinity();

struct alignas(64) ClassHot {
  double rate = 0.0;  // bytes/s per flow
  std::uint32_t flows = 0;
  std::uint32_t mark = 0;       // component search stamp
  std::uint32_t path_size = 0;  // links, | kSprayedBit for a sprayed class, | kCappedBit
  // The path when it has at most kInlinePath links (else in FlowClass::long_path).
  std::uint32_t path[kInlinePath] = {};
  // The most bytes/s each flow of the class may take, whatever its links leave (infinity: no
  // cap); with kCappedBit. (Here and not in FlowClass: the search reads it for every capped
  // class it finds, as most are in a training step: each member's send ceiling.)
  double rate_cap = std::numeric_limits<double>::infinity();
};
static_assert(sizeof(ClassHot) == 64);

// (A class's drain end is kept in the drain queue only: drain_queue.hpp.)
struct alignas(32) ClassDrain {
  double drained = 0.0;             // D: bytes drained by each flow of the class since its creation
  std::int64_t settled_ps = 0;      // time up to which `drained` is computed
  double first_target = 0.0;        // FlowClass::targets.front().first (when active)
  std::uint32_t queue_ref = kNone;  // its place in the drain queue (DrainQueue's), kNone: absent
  std::uint32_t queue_pos = 0;      // (DrainQueue's)
};
static_assert(sizeof(ClassDrain) == 32);

struct FlowClass {
  std::vector<std::uint32_t> long_path;     // the path when longer than kInlinePath links
  std::vector<double> shares;               // a sprayed class's share per link (else empty)
  double link_bytes_per_byte = 0.0;         // sum of the shares (the path length unsprayed)
  std::vector<std::uint32_t> slot_in_link;  // position in FlowTables::link_classes[path[i]]
  std::vector<std::pair<double, std::uint32_t>> targets;  // min-heap of (D target, part)
  std::uint64_t hash = 0;
  Time latency;
  std::uint32_t next_same_hash = kNone;
  bool dirty = false;  // listed in IncrementalMaxMin's changes
  bool in_use = false;
};

// Links (struct of arrays, by link index) and classes (three arrays, by class index).
struct FlowTables {
  std::vector<double> link_capacity;                     // bytes/s
  std::vector<std::vector<std::uint32_t>> link_classes;  // active classes crossing the link
  // Parallel to link_classes: the share of each of those classes on the link (1 unless sprayed).
  std::vector<std::vector<double>> link_shares;
  std::vector<double> link_load;  // bytes/s, as of the last solve
  // Flows crossing the link now (counted once per listing of the link in a path).
  std::vector<std::uint32_t> link_flows;
  // Flows of sprayed classes active now (their shares make link_flows no bound on a link's load).
  std::uint64_t sprayed_flows = 0;
  // Since the link's last solve (kept only without idle_tolerance): the load of the flows that
  // left it, less the flows that joined it counted at their class's rate then (0 for a new
  // class). link_load less this is the load of the flows there now, each at its class's rate.
  std::vector<double> link_unsolved;

  std::vector<FlowClass> classes;
  std::vector<ClassHot> hot;      // parallel to classes
  std::vector<ClassDrain> drain;  // parallel to classes

  static bool sprayed(const ClassHot& h) { return (h.path_size & kSprayedBit) != 0; }
  static bool capped(const ClassHot& h) { return (h.path_size & kCappedBit) != 0; }
  // A class's cap per flow: ClassHot::rate_cap, or infinity.
  double rate_cap(std::uint32_t cls) const {
    return capped(hot[cls]) ? hot[cls].rate_cap : std::numeric_limits<double>::infinity();
  }
  // The class's links, from ClassHot (a plain path of at most kInlinePath links) or
  // FlowClass::long_path.
  std::span<const std::uint32_t> path(std::uint32_t cls) const {
    const ClassHot& h = hot[cls];
    const std::uint32_t length = h.path_size & kPathLengthMask;
    return !sprayed(h) && length <= kInlinePath
               ? std::span<const std::uint32_t>(h.path, length)
               : std::span<const std::uint32_t>(classes[cls].long_path);
  }
  // The share of class `cls` on the i-th link of its path (1 unless sprayed).
  double share(std::uint32_t cls, std::size_t i) const {
    return sprayed(hot[cls]) ? classes[cls].shares[i] : 1.0;
  }
};

}  // namespace stepsim::engine::detail
