#include "topology/builder_registry.hpp"
namespace stepsim::topology {
void register_ub_mesh_presets(BuilderRegistry&) {}
}  // namespace stepsim::topology
