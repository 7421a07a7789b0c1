// How many cores this process may really use: the CPUs it may run on (its affinity mask, which
// containers and taskset narrow) and the CPU time its cgroup allows (a container's --cpus quota:
// cgroup v2's cpu.max, v1's cpu.cfs_quota_us), whichever is fewer. std::thread's
// hardware_concurrency() and OpenMP's defaults count the host's cores, and a team that size on a
// 2-CPU quota keeps being descheduled in the middle of every parallel region.
#pragma once

#include <optional>
#include <string>

namespace voxrt {

// At least 1.
int usable_cores();

// The cores a cgroup quota allows, rounded up, from the text of cgroup v2's cpu.max ("max 100000"
// or "200000 100000") or, with v1_period, v1's cpu.cfs_quota_us and cpu.cfs_period_us (-1: no
// quota); nullopt when there is no quota or the text is not understood. Exposed for the tests.
std::optional<int> cores_of_cgroup_quota(const std::string& cpu_max);
std::optional<int> cores_of_cgroup_quota(const std::string& v1_quota, const std::string& v1_period);

}  // namespace voxrt
