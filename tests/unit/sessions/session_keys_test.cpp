// Local model servers as a session reaches them: a server on the host's loopback gets a
// name of its own that the proxy leads back (the container's loopback is not the host's);
// any other host is kept, and either way one exact host:port rule admits it.
#include "sessions/session_keys.hpp"

#include <gtest/gtest.h>

namespace handler::sessions {
namespace {

store::Account account(const std::string& kind, const std::string& url) {
    store::Account made;
    made.name = "local";
    made.kind = kind;
    made.base_url = url;
    return made;
}

TEST(LocalServer, AServerOnTheHostsLoopbackGetsANameTheProxyLeadsBack) {
    for (const std::string url : {"http://127.0.0.1:11434", "http://localhost:11434", "http://[::1]:11434"}) {
        auto server = local_server(account("ollama", url));
        ASSERT_TRUE(server.ok()) << url << ": " << server.error().message;
        EXPECT_EQ(server->container_url, "http://ollama.handler.internal:11434") << url;
        EXPECT_EQ(server->rule, "ollama.handler.internal:11434");
        ASSERT_TRUE(server->pinned.has_value());
    }
    auto with_path = local_server(account("llama-cpp", "https://127.0.0.2/base"));
    ASSERT_TRUE(with_path.ok());
    EXPECT_EQ(with_path->container_url, "https://llama-cpp.handler.internal:443/base");
    EXPECT_EQ(with_path->port, 443);
}

TEST(LocalServer, AnyOtherHostIsKeptAndAdmittedByAnExactRule) {
    auto lan = local_server(account("ollama", "http://192.168.1.20:11434"));
    ASSERT_TRUE(lan.ok());
    EXPECT_EQ(lan->container_url, "http://192.168.1.20:11434");
    EXPECT_EQ(lan->rule, "192.168.1.20:11434");
    EXPECT_FALSE(lan->pinned.has_value());
    auto v6 = local_server(account("ollama", "http://[fd00::5]:8080"));
    ASSERT_TRUE(v6.ok());
    EXPECT_EQ(v6->rule, "[fd00::5]:8080");
}

TEST(LocalServer, OnlyLocalKindsWithAnHttpUrlHaveOne) {
    EXPECT_FALSE(local_server(account("anthropic-api-key", "http://127.0.0.1:1")).ok());
    EXPECT_FALSE(local_server(account("ollama", "ftp://127.0.0.1:1")).ok());
    store::Account none = account("ollama", "");
    none.base_url.reset();
    EXPECT_FALSE(local_server(none).ok());
}

} // namespace
} // namespace handler::sessions
