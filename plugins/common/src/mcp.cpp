#include <plugin_common/mcp.hpp>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>

#include <stdexcept>
#include <string>

namespace handler::plugin_common {

namespace json = boost::json;

namespace {

// ACP's [{"name","value"}] as {"name":"value"} (env and headers).
json::object pairs(const json::value* list, const std::string& where) {
    json::object out;
    if (list == nullptr) return out;
    if (!list->is_array()) throw std::invalid_argument(where + " is not a list of {name, value}");
    for (const auto& entry : list->get_array()) {
        const auto* pair = entry.if_object();
        const auto* name = pair ? pair->if_contains("name") : nullptr;
        const auto* value = pair ? pair->if_contains("value") : nullptr;
        if (name == nullptr || !name->is_string() || value == nullptr || !value->is_string())
            throw std::invalid_argument(where + " has an entry without a string name and value");
        out[name->get_string()] = value->get_string();
    }
    return out;
}

} // namespace

json::object mcp_config(std::string_view servers_json) {
    json::object servers;
    if (!servers_json.empty()) {
        boost::system::error_code error;
        const json::value list = json::parse(servers_json, error);
        if (error || !list.is_array()) throw std::invalid_argument("the MCP servers are not a JSON list");
        std::size_t index = 0;
        for (const auto& entry : list.get_array()) {
            const std::string where = "MCP server " + std::to_string(index++);
            const auto* server = entry.if_object();
            const auto* name = server ? server->if_contains("name") : nullptr;
            if (name == nullptr || !name->is_string() || name->get_string().empty())
                throw std::invalid_argument(where + " has no name");
            json::object config;
            const auto* type = server->if_contains("type");
            const std::string kind = type != nullptr && type->is_string() ? std::string(type->get_string()) : "stdio";
            if (kind == "stdio") {
                const auto* command = server->if_contains("command");
                if (command == nullptr || !command->is_string()) throw std::invalid_argument(where + " has no command");
                config["type"] = "stdio";
                config["command"] = command->get_string();
                json::array args;
                if (const auto* given = server->if_contains("args"); given != nullptr && given->is_array())
                    for (const auto& arg : given->get_array())
                        if (arg.is_string()) args.push_back(arg);
                config["args"] = std::move(args);
                config["env"] = pairs(server->if_contains("env"), where + "'s env");
            } else if (kind == "http" || kind == "sse") {
                const auto* url = server->if_contains("url");
                if (url == nullptr || !url->is_string()) throw std::invalid_argument(where + " has no url");
                config["type"] = kind;
                config["url"] = url->get_string();
                config["headers"] = pairs(server->if_contains("headers"), where + "'s headers");
            } else {
                throw std::invalid_argument(where + " is of type '" + kind + "', not stdio, http or sse");
            }
            servers[name->get_string()] = std::move(config);
        }
    }
    return json::object{{"mcpServers", std::move(servers)}};
}

} // namespace handler::plugin_common
