#include "sessions/launch.hpp"

#include <openssl/x509.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

namespace handler::sessions {

Result<runtime::ContainerSpec> container_spec(const plugins::LaunchSpec& launch,
                                              const LaunchContext& context) {
    if (launch.arguments.empty() || launch.arguments.front().empty())
        return make_error(ErrorCode::invalid_argument,
                          "the harness gave no program to run for session " + context.session_id);
    // Files are written by the session service once it can place them without giving
    // the container a writable view of anything of the host's (issue 5 needs them).
    if (!launch.files.empty())
        return make_error(ErrorCode::unavailable,
                          "the harness asked for files in the container (" +
                              launch.files.front().path +
                              "), which this version of handlerd cannot place yet");
    for (const auto& secret : launch.secret_env)
        if (!context.stand_ins.contains(secret.secret_name))
            return make_error(ErrorCode::internal, "no stand-in was made for the harness's " +
                                                       secret.secret_name + " key");
    if (context.rows == 0 || context.cols == 0)
        return make_error(ErrorCode::invalid_argument, "terminal size must be at least 1x1");

    runtime::ContainerSpec spec;
    spec.session_id = context.session_id;
    spec.image = launch.image.empty() ? context.default_image : launch.image;
    spec.project_path = context.project_path;
    spec.workdir = launch.workdir.empty() ? context.project_path
                                          : std::filesystem::path(launch.workdir);
    spec.control_dir = context.control_dir;
    spec.helper_dir = context.helper_dir;
    spec.network = context.open_network ? runtime::NetworkMode::slirp4netns : runtime::NetworkMode::none;
    if (context.trust_ca) spec.trust_bundle = context.control_dir / kTrustBundleName;
    if (!launch.account_state_env.empty()) {
        if (context.account_state_dir.empty())
            return make_error(ErrorCode::invalid_argument,
                              "the harness keeps its login in the account's own folder, and this session has "
                              "no account; give the agent one (handler agent edit NAME --account ACCOUNT)");
        spec.account_state_dir = context.account_state_dir;
    }
    if (!launch.session_state_env.empty()) {
        if (context.session_state_dir.empty())
            return make_error(ErrorCode::internal, "no state folder was made for session " + context.session_id);
        spec.session_state_dir = context.session_state_dir;
    }

    const std::string helper = std::string(runtime::kHelperMountPoint) + "/" + kShimProgram;
    spec.argv = {helper, "--connect",
                 std::string(runtime::kControlMountPoint) + "/" + kControlSocketName};
    if (context.tty)
        spec.argv.insert(spec.argv.end(), {"--tty", "--rows", std::to_string(context.rows),
                                           "--cols", std::to_string(context.cols)});
    if (context.proxy_port != 0)
        spec.argv.insert(spec.argv.end(),
                         {"--proxy-port", std::to_string(context.proxy_port), "--proxy-socket",
                          std::string(runtime::kControlMountPoint) + "/" + kProxySocketName});
    spec.argv.emplace_back("--");
    spec.argv.insert(spec.argv.end(), launch.arguments.begin(), launch.arguments.end());

    // TERM first, so a harness's own choice (a later entry) wins.
    if (context.tty) spec.env.push_back({"TERM", "xterm-256color"});
    if (context.proxy_port != 0) {
        // Both spellings: tools disagree on which they read. NO_PROXY keeps the
        // container's own loopback direct (the proxy itself is on it).
        const std::string proxy = "http://127.0.0.1:" + std::to_string(context.proxy_port);
        for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                                 "https_proxy", "all_proxy"})
            spec.env.push_back({name, proxy});
        for (const char* name : {"NO_PROXY", "no_proxy"})
            spec.env.push_back({name, "localhost,127.0.0.1,::1"});
    }
    if (context.trust_ca) {
        // The system store is replaced too (trust_bundle), but many runtimes bring their
        // own list: these are the variables each reads (Node adds to its list; the
        // others replace theirs, so they get the whole bundle).
        const std::string dir = std::string(runtime::kControlMountPoint) + "/";
        spec.env.push_back({"NODE_EXTRA_CA_CERTS", dir + kCaCertificateName});
        for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"})
            spec.env.push_back({name, dir + kTrustBundleName});
    }
    for (const auto& entry : launch.env) spec.env.push_back({entry.name, entry.value});
    if (!launch.account_state_env.empty())
        spec.env.push_back({launch.account_state_env, runtime::kAccountStateMountPoint});
    if (!launch.session_state_env.empty())
        spec.env.push_back({launch.session_state_env, runtime::kSessionStateMountPoint});
    // Last, so nothing the harness sets can put anything else there.
    for (const auto& secret : launch.secret_env)
        spec.env.push_back({secret.name, context.stand_ins.at(secret.secret_name)});
    return spec;
}

Result<void> merge_addon(std::string_view addon, const plugins::LaunchSpec& contribution,
                         plugins::LaunchSpec& spec, std::vector<std::string>& addon_hosts) {
    const std::string name = "addon '" + std::string(addon) + "'";
    auto refuse = [&](const std::string& what) {
        return make_error(ErrorCode::invalid_argument, name + " " + what + "; an addon adds to a session, it does "
                                                                           "not change what the harness chose");
    };
    if (!contribution.image.empty()) return refuse("sets the image");
    if (!contribution.arguments.empty()) return refuse("sets the program");
    if (!contribution.workdir.empty()) return refuse("sets the working folder");
    if (!contribution.account_state_env.empty()) return refuse("keeps the account's state");
    if (!contribution.session_state_env.empty()) return refuse("keeps the session's state");
    // A protocol harness's stdin is its own; an addon's bytes there could speak for the user.
    if (!contribution.input.empty()) return refuse("writes to the harness's stdin");
    for (const auto& variable : contribution.env)
        if (std::any_of(spec.env.begin(), spec.env.end(), [&](const auto& set) { return set.name == variable.name; }) ||
            std::any_of(spec.secret_env.begin(), spec.secret_env.end(),
                        [&](const auto& set) { return set.name == variable.name; }))
            return refuse("sets " + variable.name + ", which is already set");
    for (const auto& secret : contribution.secret_env)
        if (std::any_of(spec.env.begin(), spec.env.end(), [&](const auto& set) { return set.name == secret.name; }) ||
            std::any_of(spec.secret_env.begin(), spec.secret_env.end(),
                        [&](const auto& set) { return set.name == secret.name; }))
            return refuse("sets " + secret.name + ", which is already set");
    for (const auto& file : contribution.files)
        if (std::any_of(spec.files.begin(), spec.files.end(), [&](const auto& set) { return set.path == file.path; }))
            return refuse("writes " + file.path + ", which is already written");
    spec.env.insert(spec.env.end(), contribution.env.begin(), contribution.env.end());
    spec.secret_env.insert(spec.secret_env.end(), contribution.secret_env.begin(), contribution.secret_env.end());
    spec.files.insert(spec.files.end(), contribution.files.begin(), contribution.files.end());
    for (const auto& host : contribution.allowed_hosts) {
        std::string rule = host.port == 0 ? host.pattern : host.pattern + ":" + std::to_string(host.port);
        if (std::find(addon_hosts.begin(), addon_hosts.end(), rule) == addon_hosts.end())
            addon_hosts.push_back(std::move(rule));
    }
    return {};
}

std::filesystem::path system_trust_bundle(const GetEnv& getenv) {
    // The variable's name as OpenSSL reads it.
    const char* chosen = getenv(X509_get_default_cert_file_env());
    if (chosen != nullptr && *chosen != '\0') return chosen;
    return "/etc/ssl/certs/ca-certificates.crt";
}

namespace {

// The certificates of a PEM bundle, nothing else: the file is the machine owner's to
// choose (SSL_CERT_FILE), and one that also holds a private key (a key and its
// certificate in one file is common) must not hand that key to every session.
std::string certificates_of(std::string_view text) {
    std::string certificates;
    for (std::size_t at = 0;;) {
        const std::size_t begin = text.find("-----BEGIN ", at);
        if (begin == std::string_view::npos) break;
        const std::size_t label_end = text.find("-----", begin + 11);
        if (label_end == std::string_view::npos) break;
        const std::string_view label = text.substr(begin + 11, label_end - begin - 11);
        const std::string end_line = "-----END " + std::string(label) + "-----";
        const std::size_t end = text.find(end_line, label_end);
        if (end == std::string_view::npos) break;
        at = end + end_line.size();
        if (label == "CERTIFICATE" || label == "TRUSTED CERTIFICATE")
            certificates.append(text.substr(begin, at - begin)).push_back('\n');
    }
    return certificates;
}

} // namespace

Result<void> write_trust_files(const std::filesystem::path& control_dir, const std::string& ca_certificate_pem,
                               const std::filesystem::path& system_bundle) {
    std::string bundle;
    if (std::ifstream system(system_bundle, std::ios::binary); system) {
        std::ostringstream text;
        text << system.rdbuf();
        bundle = certificates_of(text.str());
    }
    bundle += ca_certificate_pem;
    using File = std::pair<const char*, const std::string*>;
    for (const auto& [name, text] : {File{kCaCertificateName, &ca_certificate_pem}, File{kTrustBundleName, &bundle}}) {
        std::ofstream out(control_dir / name, std::ios::binary | std::ios::trunc);
        out << *text;
        if (!out.flush())
            return make_error(ErrorCode::internal, "cannot write " + (control_dir / name).string() + " for the session");
    }
    return {};
}

} // namespace handler::sessions
