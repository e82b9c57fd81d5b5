#include "topology/builder_registry.hpp"
namespace stepsim::topology {
void register_torus_builders(BuilderRegistry&) {}
}  // namespace stepsim::topology
