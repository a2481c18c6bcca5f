#include "runner/train/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "platform/atomic_file.h"

namespace cedar {
namespace {

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error("checkpoint: cannot " + what + " '" + path +
                            "': " + std::strerror(errno));
}

void make_dirs(const std::string& path) {
  std::string partial;
  std::istringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw io_error("create folder", partial);
  }
}

// Flushed to disk before the rename, so that the rename publishes complete contents.
void publish(const std::string& tmp, const std::string& path) {
  publish_file(tmp, path, PublishOptions{true, 0});
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  return names;
}

// Step of a file named rank-<r>.step-<s>.pt (or its .tmp), -1 for other names.
int64_t step_of(const std::string& name) {
  auto pos = name.find(".step-");
  if (name.rfind("rank-", 0) != 0 || pos == std::string::npos) return -1;
  return std::atoll(name.c_str() + pos + 6);
}

}  // namespace

CheckpointDir::CheckpointDir(std::string dir, int rank, int world_size)
    : dir_(std::move(dir)), rank_(rank), world_size_(world_size) {}

std::string CheckpointDir::rank_file(int rank, int64_t step) const {
  return dir_ + "/rank-" + std::to_string(rank) + ".step-" + std::to_string(step) + ".pt";
}

void CheckpointDir::prepare() const {
  make_dirs(dir_);
  const std::string probe = dir_ + "/.probe-" + std::to_string(rank_);
  std::ofstream out(probe);
  out << "ok\n";
  out.close();
  if (!out) throw io_error("write into checkpoint folder", dir_);
  ::unlink(probe.c_str());
}

void CheckpointDir::write(int64_t step, const TensorMap& state) const {
  torch::serialize::OutputArchive archive;
  for (const auto& [key, t] : state) archive.write(key, t);
  const std::string path = rank_file(rank_, step);
  const std::string tmp = path + ".tmp";
  try {
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint: cannot write '" + tmp + "': " + e.what());
  }
  publish(tmp, path);
}

void CheckpointDir::commit(int64_t step) const {
  const std::string path = dir_ + "/LATEST";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "step " << step << " world_size " << world_size_ << "\n";
    out.close();
    if (!out) throw io_error("write", tmp);
  }
  publish(tmp, path);
  for (const std::string& name : list_dir(dir_)) {
    const int64_t s = step_of(name);
    if (s >= 0 && s < step) ::unlink((dir_ + "/" + name).c_str());
  }
}

int64_t CheckpointDir::latest() const {
  const std::string path = dir_ + "/LATEST";
  std::ifstream in(path);
  if (!in) return -1;
  std::string step_word, world_word;
  int64_t step = -1, world = -1;
  in >> step_word >> step >> world_word >> world;
  if (!in || step_word != "step" || world_word != "world_size" || step < 0)
    throw std::runtime_error("checkpoint: '" + path + "' is not a checkpoint record");
  if (world != world_size_)
    throw std::runtime_error("checkpoint: '" + path + "' was written by " + std::to_string(world) +
                             " ranks; this run has " + std::to_string(world_size_));
  return step;
}

TensorMap CheckpointDir::read(int64_t step) const {
  const std::string path = rank_file(rank_, step);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint: cannot read '" + path + "': " + e.what());
  }
  TensorMap state;
  for (const std::string& key : archive.keys()) {
    at::Tensor t;
    archive.read(key, t);
    state[key] = t;
  }
  return state;
}

void CheckpointDir::remove() const {
  for (const std::string& name : list_dir(dir_)) ::unlink((dir_ + "/" + name).c_str());
  ::rmdir(dir_.c_str());
  // The parent (<db>.checkpoints) goes too once no run keeps a checkpoint there.
  const auto slash = dir_.find_last_of('/');
  if (slash != std::string::npos && slash > 0) ::rmdir(dir_.substr(0, slash).c_str());
}

}  // namespace cedar
