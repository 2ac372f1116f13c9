// The shell harness: a login bash in the session's container. It runs no agent, which
// makes it the harness for looking around a container (`handler terminal shell`), for
// one-off commands (`handler run shell -p "make test"`), and for testing handlerd
// without a model account.
#include <handler/plugin.hpp>

#include <string>

namespace {

using handler::sdk::EventSink;
using handler::sdk::LaunchBuilder;
using handler::sdk::LaunchRequest;
using handler::sdk::PluginError;

// How many bytes at the end of `bytes` start a UTF-8 sequence that is not complete yet.
std::size_t incomplete_utf8_tail(std::string_view bytes) {
    const std::size_t look = std::min<std::size_t>(bytes.size(), 3);
    for (std::size_t back = 1; back <= look; ++back) {
        const auto byte = static_cast<unsigned char>(bytes[bytes.size() - back]);
        if ((byte & 0xc0) == 0x80) continue; // a continuation byte: keep looking for the lead
        std::size_t length = 1;
        if ((byte & 0xe0) == 0xc0) length = 2;
        else if ((byte & 0xf0) == 0xe0) length = 3;
        else if ((byte & 0xf8) == 0xf0) length = 4;
        return length > back ? back : 0;
    }
    return 0;
}

// A shell has no structured output, so its stdout becomes agent message text. Pieces
// may split a UTF-8 sequence; its start waits for the next piece so no character is
// mangled into U+FFFD at a seam.
class TextParser : public handler::sdk::EventParser {
public:
    void feed(std::string_view bytes, EventSink& sink) override {
        pending_.append(bytes);
        const std::size_t keep = incomplete_utf8_tail(pending_);
        const std::string_view ready = std::string_view(pending_).substr(0, pending_.size() - keep);
        if (!ready.empty())
            sink.emit(HD_EVENT_AGENT_MESSAGE_CHUNK,
                      R"({"content":{"type":"text","text":)" + handler::sdk::json_quote(ready) + "}}");
        pending_.erase(0, pending_.size() - keep);
    }

private:
    std::string pending_;
};

// The variable each provider's own SDKs and CLIs read their key from. A shell agent with
// an account gets its key's stand-in there, so a script in the session (curl, an SDK)
// reaches the provider through the egress proxy, which puts the real key in.
const char* key_variable(std::string_view account_kind) {
    if (account_kind == "anthropic-api-key") return "ANTHROPIC_API_KEY";
    if (account_kind == "claude-subscription") return "CLAUDE_CODE_OAUTH_TOKEN";
    if (account_kind == "openai-api-key") return "OPENAI_API_KEY";
    if (account_kind == "openrouter-api-key") return "OPENROUTER_API_KEY";
    if (account_kind == "mistral-api-key") return "MISTRAL_API_KEY";
    return nullptr;
}

class ShellHarness : public handler::sdk::Harness {
public:
    // No hosts of its own: a shell reaches only what the session allows. Any key kind
    // works (key_variable).
    std::string describe() override {
        return R"({"default_hosts":[],"credentials":[],"models":[],"modes":[],)"
               R"("launch_modes":["interactive","headless"],"events":"text"})";
    }

    // bash where the image has it (the base image does), else the image's POSIX sh, so a
    // minimal image (busybox) still gets a shell. /bin/sh picks, then execs: no extra
    // process stays between the shim and the shell.
    static constexpr const char* kInteractive =
        "command -v bash >/dev/null 2>&1 && exec bash -l \"$@\"; exec /bin/sh -l \"$@\"";
    // $0 is the prompt; the extra arguments are its $1, $2, ...
    static constexpr const char* kHeadless =
        "command -v bash >/dev/null 2>&1 && exec bash -lc \"$0\" bash \"$@\"; "
        "exec /bin/sh -c \"$0\" sh \"$@\"";

    void launch(const LaunchRequest& request, LaunchBuilder& launch) override {
        if (request.interactive()) {
            // `handler terminal shell -- ARGS` passes ARGS to the shell itself.
            launch.arguments({"/bin/sh", "-c", kInteractive, "sh"}).arguments(request.extra_args);
        } else {
            if (request.prompt.empty())
                throw PluginError(HD_STATUS_INVALID_ARGUMENT,
                                  "the shell harness runs a headless session as `bash -lc PROMPT`; "
                                  "give it a command to run (handler run shell -p \"make test\")");
            launch.arguments({"/bin/sh", "-c", kHeadless}).argument(request.prompt);
            launch.arguments(request.extra_args);
        }
        if (!request.project_path.empty()) launch.workdir(request.project_path);
        if (const char* variable = key_variable(request.account_kind))
            launch.env_from_secret(variable, request.account_kind);
        // A local model server: where its own clients look for it (ollama's CLI reads
        // OLLAMA_HOST; llama.cpp's server speaks the OpenAI API under /v1).
        if (!request.account_base_url.empty()) {
            const std::string url(request.account_base_url);
            if (request.account_kind == "ollama") launch.env("OLLAMA_HOST", url);
            else launch.env("OPENAI_BASE_URL", url.ends_with("/v1") ? url : url + "/v1");
        }
    }

    std::unique_ptr<handler::sdk::EventParser> open_events(std::string_view) override {
        return std::make_unique<TextParser>();
    }
};

} // namespace

HD_HARNESS_PLUGIN(ShellHarness, "shell", "0.1.0", "Shell",
                  "A login bash in the session's container, for looking around and for tests")
