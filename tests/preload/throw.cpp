// SPDX-License-Identifier: MIT
// A C++ program built without faultline, for test_preload_lib (built by it with the host's g++).
// Usage: throw uncaught | noexcept | own-handler | abort
//   uncaught     parse_config throws app::config_error (a std::runtime_error) that nothing catches
//   noexcept     the same exception leaves a noexcept function: std::terminate
//   own-handler  the program sets its own terminate handler (which aborts), then as uncaught
//   abort        std::abort with no exception
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace app {
struct config_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
} // namespace app

__attribute__((noinline)) void parse_config(const char *s) {
    if (!*s) throw app::config_error("empty config");
}

__attribute__((noinline)) void load_noexcept(const char *s) noexcept { parse_config(s); }

static void own_handler() { std::abort(); }

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "";
    if (!std::strcmp(m, "uncaught")) parse_config("");
    if (!std::strcmp(m, "noexcept")) load_noexcept("");
    if (!std::strcmp(m, "own-handler")) {
        std::set_terminate(own_handler);
        parse_config("");
    }
    if (!std::strcmp(m, "abort")) std::abort();
    return 2;
}
