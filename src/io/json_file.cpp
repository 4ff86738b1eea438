// parse_strict_json / read_strict_json_file: duplicate keys found with the parser's callback,
// number overflow and syntax errors rethrown as gossamer::Error naming the file.
#include "io/json_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "core/error.h"

namespace gossamer::io {

namespace {

// Tracks, per open object, the keys seen so far and the key being parsed, so that a duplicate
// can be reported with its dotted path.
struct DuplicateKeyCheck {
  struct Level {
    std::set<std::string> keys;
    std::string current;
  };
  std::vector<Level> open;
  std::string duplicate;  // the dotted path of the first duplicate key, if any

  std::string path_to(const std::string& key) const {
    std::string p;
    for (const auto& l : open)
      if (&l != &open.back()) p += l.current + ".";
    return p + key;
  }
};

}  // namespace

template <class Json>
Json parse_strict_json(const std::string& text, const std::string& source) {
  DuplicateKeyCheck check;
  auto callback = [&check](int, typename Json::parse_event_t event, Json& parsed) {
    using E = typename Json::parse_event_t;
    if (event == E::object_start) check.open.emplace_back();
    if (event == E::object_end && !check.open.empty()) check.open.pop_back();
    if (event == E::array_start) check.open.push_back({{}, "[]"});
    if (event == E::array_end && !check.open.empty()) check.open.pop_back();
    if (event == E::key && !check.open.empty()) {
      const std::string key = parsed.template get<std::string>();
      if (!check.open.back().keys.insert(key).second && check.duplicate.empty())
        check.duplicate = check.path_to(key);
      check.open.back().current = key;
    }
    return true;
  };
  Json j;
  try {
    j = Json::parse(text, callback);
  } catch (const typename Json::out_of_range& e) {
    fail("%s: not valid JSON: a number does not fit (%s)", source.c_str(), e.what());
  } catch (const typename Json::exception& e) {
    fail("%s: not valid JSON: %s", source.c_str(), e.what());
  }
  GOSSAMER_CHECK(check.duplicate.empty(),
                 "%s: duplicate key %s (each key may appear once; JSON keeps only the last)",
                 source.c_str(), check.duplicate.c_str());
  return j;
}

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Opens `path` for reading without blocking (a FIFO would wait for a writer) and checks that
// it is a regular file; returns the descriptor and its status.
int open_regular(const std::string& path, const char* what, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  GOSSAMER_CHECK(fd >= 0, "%s: cannot open %s: %s", path.c_str(), what, std::strerror(errno));
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("%s: cannot read %s: %s", path.c_str(), what, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("%s: is %s, not a %s (a regular file is expected)", path.c_str(), file_kind(st.st_mode),
         what);
  }
  return fd;
}

}  // namespace

std::string read_user_file(const std::string& path, const char* what, size_t max_bytes) {
  struct stat st {};
  const int fd = open_regular(path, what, st);
  const auto too_large = [&] {
    ::close(fd);
    fail("%s: %s of more than %zu bytes; refusing to read it (is it the right file?)", path.c_str(),
         what, max_bytes);
  };
  if (uint64_t(st.st_size) > max_bytes) too_large();
  std::string text;
  char buf[65536];
  for (;;) {  // bounded even if the file grows while it is read
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail("%s: cannot read %s: %s", path.c_str(), what, std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, size_t(n));
    if (text.size() > max_bytes) too_large();
  }
  ::close(fd);
  return text;
}

void check_regular_file(const std::string& path, const char* what) {
  struct stat st {};
  ::close(open_regular(path, what, st));
}

nlohmann::json read_json_object(const std::string& path, const char* what) {
  nlohmann::json j = nlohmann::json::parse(read_user_file(path, what), nullptr, false);
  GOSSAMER_CHECK(!j.is_discarded() && j.is_object(), "%s: not a valid JSON object", path.c_str());
  return j;
}

template <class Json>
Json read_strict_json_file(const std::string& path, const char* what) {
  return parse_strict_json<Json>(read_user_file(path, what), path);
}

template nlohmann::json parse_strict_json<nlohmann::json>(const std::string&, const std::string&);
template nlohmann::ordered_json parse_strict_json<nlohmann::ordered_json>(const std::string&,
                                                                          const std::string&);
template nlohmann::json read_strict_json_file<nlohmann::json>(const std::string&, const char*);
template nlohmann::ordered_json read_strict_json_file<nlohmann::ordered_json>(const std::string&,
                                                                              const char*);

}  // namespace gossamer::io
