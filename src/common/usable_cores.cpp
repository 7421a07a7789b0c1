#include "common/usable_cores.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

namespace voxrt {
namespace {

std::optional<int> cores_of(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<int>(std::max(1LL, (quota + period - 1) / period));
}

std::string read_file(const char* path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

std::optional<int> cores_of_cgroup_quota(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  try {
    size_t used = 0;
    const long long q = std::stoll(quota, &used);
    if (used != quota.size()) return std::nullopt;
    return cores_of(q, period);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<int> cores_of_cgroup_quota(const std::string& v1_quota, const std::string& v1_period) {
  long long q = 0, p = 0;
  std::istringstream qs(v1_quota), ps(v1_period);
  if (!(qs >> q) || !(ps >> p)) return std::nullopt;
  return cores_of(q, p);
}

namespace {

// cgroup v2: the process's group (/proc/self/cgroup's "0::/path") and each group above it may set
// a quota; the smallest binds. Inside a container with its own cgroup namespace the path is "/".
std::optional<int> cgroup_v2_cores() {
  std::istringstream lines(read_file("/proc/self/cgroup"));
  std::string line, path;
  while (std::getline(lines, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty() || path[0] != '/') return std::nullopt;
  std::optional<int> least;
  for (;;) {
    const std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
    const std::optional<int> q = cores_of_cgroup_quota(read_file((dir + "/cpu.max").c_str()));
    if (q && (!least || *q < *least)) least = q;
    if (path == "/") break;
    const size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return least;
}

}  // namespace

int usable_cores() {
  int cores = affinity_cores();
  std::optional<int> quota = cgroup_v2_cores();
  if (!quota)  // cgroup v1, as a container sees its own group
    quota = cores_of_cgroup_quota(read_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                                  read_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
  if (quota) cores = std::min(cores, *quota);
  return std::max(1, cores);
}

}  // namespace voxrt
