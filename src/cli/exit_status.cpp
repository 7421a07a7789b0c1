#include "cli/commands.h"

namespace voxrt::cli {
namespace {
int g_status = 0;
}
void set_exit_status(int status) { g_status = status; }
int exit_status() { return g_status; }
}  // namespace voxrt::cli
