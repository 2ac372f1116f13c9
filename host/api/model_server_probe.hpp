// "Test" for a local model server (llama.cpp, Ollama): handlerd GETs the server's model
// list and says what it saw (docs/api.md, "Setup"). Behind an interface so the routes are
// tested with a fake and only model_server_probe.cpp holds the HTTP client.
//
// What it may do is small on purpose, since the page asks it to reach a URL of the user's
// choosing: one GET of a fixed path under a base_url that passed the accounts' validation,
// no redirects followed, 3 s in all, at most 256 KiB read, and only model names (bounded,
// printable) go back, never the body.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace handler::api {

inline constexpr std::size_t kMaxModelListBytes = 256 * 1024;
inline constexpr std::size_t kMaxModelNames = 200;
inline constexpr std::size_t kMaxModelNameBytes = 256;
inline constexpr int kModelServerTimeoutSeconds = 3;

struct ModelServerReport {
    std::string url;                 // what was asked for: base_url + the kind's path
    bool reachable = false;          // an HTTP answer came back
    unsigned status = 0;             // its status (0: none)
    std::vector<std::string> models; // names from a 200 answer
    bool more = false;               // there were more than kMaxModelNames
    std::string error;               // in words, empty when the list was read
};

class ModelServerProbe {
public:
    virtual ~ModelServerProbe() = default;
    // `done` is called once: on the probe's own thread, or before probe() returns when it
    // refuses at once (too many waiting). `base_url` is normalized already.
    virtual void probe(std::string kind, std::string base_url, std::function<void(ModelServerReport)> done) = 0;
};

// The path a kind's model list is at: "/v1/models" (llama-cpp), "/api/tags" (ollama).
std::string_view model_list_path(std::string_view kind);

// Reads an answer's body into report.models, or sets report.error: llama.cpp's OpenAI-
// style {"data":[{"id"}]} (or its {"models":[{"name"|"model"}]}), Ollama's
// {"models":[{"name"}]}. Names that are not printable text are left out.
void read_model_list(std::string_view body, ModelServerReport& report);

// The real one: Beast over TCP on one worker thread, at most `max_waiting` tests running or
// queued (more are answered at once with an error). Destroying it waits for them.
std::unique_ptr<ModelServerProbe> make_http_model_server_probe(std::size_t max_waiting = 8);

} // namespace handler::api
