#include "config/params.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

namespace cedar {

std::string Bound::describe() const {
  std::ostringstream s;
  if (!choices.empty()) {
    for (size_t i = 0; i < choices.size(); ++i) s << (i ? "|" : "") << choices[i];
    return s.str();
  }
  if (!lo && !hi) return "";
  s << (lo ? (lo_open ? "(" : "[") : "(") << (lo ? std::to_string(*lo) : "-inf") << ", "
    << (hi ? std::to_string(*hi) : "inf") << (hi ? (hi_open ? ")" : "]") : ")");
  std::string r = s.str();
  // Trim trailing zeros of std::to_string for readability.
  std::string out;
  for (size_t i = 0; i < r.size(); ++i) {
    out += r[i];
    if (r[i] == '.') {
      size_t j = i + 1;
      while (j < r.size() && std::isdigit(static_cast<unsigned char>(r[j]))) ++j;
      std::string digits = r.substr(i + 1, j - i - 1);
      while (!digits.empty() && digits.back() == '0') digits.pop_back();
      if (digits.empty())
        out.pop_back();
      else
        out += digits;
      i = j - 1;
    }
  }
  return out;
}

bool Bound::admits(double v) const {
  if (std::isnan(v)) return false;
  if (lo && (lo_open ? !(v > *lo) : !(v >= *lo))) return false;
  if (hi && (hi_open ? !(v < *hi) : !(v <= *hi))) return false;
  return true;
}

Bound at_least(double lo) {
  Bound b;
  b.lo = lo;
  return b;
}
Bound greater_than(double lo) {
  Bound b;
  b.lo = lo;
  b.lo_open = true;
  return b;
}
Bound in_range(double lo, double hi, bool hi_open) {
  Bound b;
  b.lo = lo;
  b.hi = hi;
  b.hi_open = hi_open;
  return b;
}
Bound one_of(std::vector<std::string> choices) {
  Bound b;
  b.choices = std::move(choices);
  return b;
}
Bound output_only(Bound bound) {
  bound.output = true;
  return bound;
}
Bound unrecorded_at(std::string value, Bound bound) {
  bound.unrecorded = std::move(value);
  return bound;
}
Bound unrecorded_at(double value, Bound bound) {
  bound.unrecorded_number = value;
  return bound;
}

std::string where(const Source& src, const std::string& key_path, const YAML::Node& node) {
  // An override replaces the whole subtree under its key, whose nodes then carry positions
  // inside the --set value rather than in the file: name the override instead.
  for (std::string k = key_path; !k.empty();) {
    if (src.overridden.count(k)) return "--set " + k;
    const size_t dot = k.rfind('.');
    if (dot == std::string::npos) break;
    k.resize(dot);
  }
  std::string file = src.file.empty() ? "<config>" : src.file;
  if (node.IsDefined() && node.Mark().line >= 0)
    return file + ":" + std::to_string(node.Mark().line + 1) + ":" +
           std::to_string(node.Mark().column + 1);
  return file;
}

const char* node_kind(const YAML::Node& n) {
  return n.IsMap()        ? "a mapping"
         : n.IsSequence() ? "a list"
         : n.IsNull()     ? "a null value"
                          : "a scalar";
}

std::vector<MapEntry> checked_entries(const YAML::Node& map, const Source& src,
                                      const std::string& path) {
  std::vector<MapEntry> entries;
  std::set<std::string> seen;
  for (const auto& kv : map) {
    // A key that is not a plain scalar (`? [a, b]`, `~`) can never name a field.
    if (!kv.first.IsScalar())
      throw ConfigError(where(src, path, kv.first) + ": " + (path.empty() ? "document" : path) +
                        ": keys must be plain names, got " + node_kind(kv.first) + " as a key");
    const std::string key = kv.first.Scalar();
    const std::string dotted = path.empty() ? key : path + "." + key;
    if (!seen.insert(key).second)
      throw ConfigError(where(src, dotted, kv.first) + ": duplicate key '" + dotted + "'");
    entries.push_back({key, kv.first, kv.second});
  }
  return entries;
}

YamlLoader::YamlLoader(const YAML::Node& node, const Source& src, std::string path,
                       std::set<std::string> ignored)
    : node_(node), src_(src), path_(std::move(path)), seen_(std::move(ignored)) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap())
    throw ConfigError(where(src_, path_, node_) + ": " + (path_.empty() ? "document" : path_) +
                      ": expected a mapping of keys to values");
}

namespace {

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "true or false";
  else if constexpr (std::is_integral_v<T>)
    return "an integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else
    return "a list of numbers";
}

template <class T>
T convert_scalar(const YAML::Node& n, const std::string& at, const std::string& key) {
  if (!n.IsScalar())
    throw ConfigError(at + ": " + key + ": expected " + type_name<T>() + ", got a " +
                      (n.IsMap()        ? "mapping"
                       : n.IsSequence() ? "list"
                                        : "null value"));
  T v{};
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // yaml-cpp accepts "1.5" for integers by truncation on some versions: check strictly.
    // Decimal, or hexadecimal with 0x (a leading 0 is not octal, as in YAML 1.2); the value
    // must fit the field's type rather than wrap (4294967300 is not 4 for a 32-bit field).
    const std::string& s = n.Scalar();
    const bool negative = !s.empty() && s[0] == '-';
    const size_t digits = s.size() > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    const bool hex =
        s.size() > digits + 2 && s[digits] == '0' && (s[digits + 1] == 'x' || s[digits + 1] == 'X');
    size_t pos = 0;
    bool ok = s.size() > digits && std::isxdigit(static_cast<unsigned char>(s[digits]));
    bool fits = true;
    try {
      if (ok && std::is_signed_v<T>) {
        long long parsed = std::stoll(s, &pos, hex ? 16 : 10);
        fits = parsed >= static_cast<long long>(std::numeric_limits<T>::min()) &&
               parsed <= static_cast<long long>(std::numeric_limits<T>::max());
        v = static_cast<T>(parsed);
      } else if (ok) {
        unsigned long long parsed = std::stoull(s, &pos, hex ? 16 : 10);
        fits =
            !negative && parsed <= static_cast<unsigned long long>(std::numeric_limits<T>::max());
        v = static_cast<T>(parsed);
      }
      ok = ok && pos == s.size();
    } catch (const std::out_of_range&) {
      fits = false;
    } catch (const std::invalid_argument&) {
      ok = false;
    }
    if (!ok)
      throw ConfigError(at + ": " + key + ": expected " + type_name<T>() + ", got '" + s + "'");
    if (!fits)
      throw ConfigError(at + ": " + key + ": value " + s + " does not fit in the field (allowed: " +
                        std::to_string(std::numeric_limits<T>::min()) + " to " +
                        std::to_string(std::numeric_limits<T>::max()) + ")");
    return v;
  } else {
    if (!YAML::convert<T>::decode(n, v))
      throw ConfigError(at + ": " + key + ": expected " + type_name<T>() + ", got '" + n.Scalar() +
                        "'");
    if constexpr (std::is_floating_point_v<T>) {
      // .inf and .nan are YAML numbers but never meaningful hyper-parameters.
      if (!std::isfinite(v))
        throw ConfigError(at + ": " + key + ": expected a finite number, got '" + n.Scalar() + "'");
      // Kept to the 15 significant digits the resolved configuration records (YamlDumper), so
      // that the value a run uses is the one its record holds and reloads: 0.99999999999999994
      // would otherwise pass [0, 1) here yet be written, and reloaded, as 1.
      char digits[32];
      std::snprintf(digits, sizeof digits, "%.15g", static_cast<double>(v));
      v = static_cast<T>(std::strtod(digits, nullptr));
    }
    return v;
  }
}

template <class T>
void check_bound(const T& v, const Bound& b, const std::string& at, const std::string& key) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    if (!b.admits(static_cast<double>(v))) {
      std::ostringstream shown;
      shown << v;
      throw ConfigError(at + ": " + key + ": value " + shown.str() + " is out of range " +
                        b.describe());
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (b.choices.empty()) return;
    for (const auto& c : b.choices)
      if (c == v) return;
    throw ConfigError(at + ": " + key + ": '" + v + "' is not one of " + b.describe());
  }
}

}  // namespace

template <class T>
void YamlLoader::operator()(const char* key, T& value, const char* doc, const Bound& bound) {
  seen_.insert(key);
  if (!node_.IsDefined() || node_.IsNull()) return;
  YAML::Node n = node_[key];
  if (!n.IsDefined()) return;
  std::string kp = key_path(key);
  std::string at = where(src_, kp, n);
  if constexpr (std::is_same_v<T, std::vector<double>> || std::is_same_v<T, std::vector<int64_t>>) {
    if (!n.IsSequence()) throw ConfigError(at + ": " + kp + ": expected a list of numbers");
    T out;
    for (const auto& item : n) {
      auto x = convert_scalar<typename T::value_type>(item, where(src_, kp, item), kp);
      check_bound(x, bound, where(src_, kp, item), kp);
      out.push_back(x);
    }
    value = out;
  } else {
    T v = convert_scalar<T>(n, at, kp);
    check_bound(v, bound, at, kp);
    value = v;
  }
}

void YamlLoader::finish() const {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  for (const MapEntry& e : checked_entries(node_, src_, path_)) {
    const std::string& k = e.key;
    if (seen_.count(k)) continue;
    std::string known;
    for (const auto& s : seen_) known += (known.empty() ? "" : ", ") + s;
    throw ConfigError(where(src_, key_path(k.c_str()), e.key_node) + ": unknown key '" +
                      key_path(k.c_str()) + "' (known keys" +
                      (path_.empty() ? "" : " of " + path_) + ": " + known + ")");
  }
}

template void YamlLoader::operator()(const char*, bool&, const char*, const Bound&);
template void YamlLoader::operator()(const char*, int&, const char*, const Bound&);
template void YamlLoader::operator()(const char*, int64_t&, const char*, const Bound&);
template void YamlLoader::operator()(const char*, uint64_t&, const char*, const Bound&);
template void YamlLoader::operator()(const char*, double&, const char*, const Bound&);
template void YamlLoader::operator()(const char*, std::string&, const char*, const Bound&);
template void YamlLoader::operator()(const char*, std::vector<double>&, const char*, const Bound&);
template void YamlLoader::operator()(const char*, std::vector<int64_t>&, const char*, const Bound&);

}  // namespace cedar
