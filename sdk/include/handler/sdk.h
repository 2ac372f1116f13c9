/*
 * handler/sdk.h: the Handler plugin ABI, the one boundary between handlerd and a
 * harness or addon plugin (.so). It is C99 so that any compiler, any C++ standard
 * library and any exception model on either side can meet here ("hourglass").
 *
 * Evolution rules (docs/contracts.md repeats them for plugin authors):
 *
 *  1. HD_ABI_MAJOR changes only when something below is removed, reordered or
 *     changes meaning. The host refuses a plugin whose major differs from its own.
 *  2. HD_ABI_MINOR grows when something is appended. A plugin built for a newer minor
 *     than the host's is refused (it may rely on a field the host never fills); a
 *     plugin built for an older minor loads.
 *  3. Every extensible struct starts with `uint32_t struct_size`, set by whoever fills
 *     the struct to sizeof() as that side compiled it. Fields are only ever appended.
 *     The reader copies min(struct_size, its own sizeof) bytes into a zero-filled local,
 *     so a field the writer did not know about reads as 0 / NULL. Therefore:
 *  4. Zero is never a meaningful enum value and a NULL function pointer means "not
 *     provided". A zero-filled struct is always recognisably empty.
 *  5. Nothing allocated on one side is freed on the other. Strings passed in are
 *     borrowed for the duration of the call (hd_str). Strings passed out go through
 *     a host-provided hd_sink, which copies them. Plugin-lifetime strings (ids,
 *     versions) are static in the plugin, which is never unloaded while handlerd runs.
 *  6. No C++ exception crosses this boundary. The C++ wrappers (handler/plugin.hpp,
 *     handler/host.hpp) catch everything at the trampolines and turn it into a status
 *     plus a message written to the call's error sink.
 *  7. The host calls into one plugin instance from one thread at a time.
 *  8. Two things never change, in any major, so that every host can tell which ABI a
 *     plugin speaks and refuse it with a clear message: the entry point's signature,
 *     and the first three fields of hd_plugin_info (struct_size, abi_major, abi_minor).
 *
 * A plugin exports exactly one symbol, hd_plugin_entry (HD_ENTRY_SYMBOL), and ships a
 * plugin.toml manifest beside its .so that the host reads before it loads any code.
 */
#ifndef HANDLER_SDK_H
#define HANDLER_SDK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HD_ABI_MAJOR 1
#define HD_ABI_MINOR 1

/* The one symbol a plugin exports. */
#define HD_ENTRY_SYMBOL "hd_plugin_entry"

#if defined(__GNUC__) || defined(__clang__)
#define HD_EXPORT __attribute__((visibility("default")))
#else
#define HD_EXPORT
#endif

/* ---------------------------------------------------------------- basic types */

/* Outcome of every fallible call. HD_STATUS_OK is 1, not 0, by rule 4. */
typedef enum hd_status {
    HD_STATUS_OK = 1,
    HD_STATUS_NOT_FOUND = 2,        /* the key, container or secret does not exist */
    HD_STATUS_INVALID_ARGUMENT = 3, /* the caller passed something malformed */
    HD_STATUS_UNSUPPORTED = 4,      /* the callee does not implement this */
    HD_STATUS_DENIED = 5,           /* policy forbids it (network, secrets, context) */
    HD_STATUS_FAILED = 6            /* anything else; the error sink says what */
} hd_status;

typedef enum hd_plugin_kind {
    HD_PLUGIN_KIND_HARNESS = 1, /* runs a coding agent: claude-code, codex, pi, vibe, shell */
    HD_PLUGIN_KIND_ADDON = 2    /* adds tools to sessions: playwright, shopify-cli */
} hd_plugin_kind;

typedef enum hd_log_level {
    HD_LOG_TRACE = 1,
    HD_LOG_DEBUG = 2,
    HD_LOG_INFO = 3,
    HD_LOG_WARN = 4,
    HD_LOG_ERROR = 5
} hd_log_level;

/* A borrowed string: valid only during the call it is passed to, not NUL-terminated
 * unless said otherwise, may contain any bytes. {NULL, 0} is the empty string. */
typedef struct hd_str {
    const char* data;
    size_t size;
} hd_str;

/* Where a callee writes a string result. append may be called several times; the
 * pieces concatenate. Frozen: this struct never grows (it has no struct_size). */
typedef struct hd_sink {
    void* context;
    void (*append)(void* context, hd_str text);
} hd_sink;

/* ---------------------------------------------------------------- host services */

/* What a container spawned through container_spawn runs. Filled by the plugin. */
typedef struct hd_container_spec {
    uint32_t struct_size;
    hd_str session_id;      /* the session the container belongs to (its label) */
    hd_str image;           /* image reference, e.g. the one from the recipe */
    const hd_str* argv;     /* argv[0] is the program */
    size_t argc;
    const hd_str* env;      /* "NAME=value" entries */
    size_t env_count;
    hd_str workdir;         /* empty: the session's project folder */
} hd_container_spec;

/* Services the host offers every plugin. Filled by the host; `context` is opaque and
 * identifies the calling plugin (storage and rules are kept per plugin). */
typedef struct hd_host_api {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    void* context;

    /* Logging, into handlerd's log, tagged with the plugin id. */
    void (*log)(void* context, hd_log_level level, hd_str message);

    /* Network rules, for live sessions that use this plugin (as their harness or an
     * addon of their agent); `session_id` empty means every such session.
     * allow_host: a host the plugin needs (exact name or "*.example.com"); port 0 = any.
     * bind_secret: the secret named `secret_name` may be injected into requests to
     * `host_pattern`, in header `header_name`, formatted by `value_template` in which
     * "{}" stands for the real value (e.g. "Bearer {}"). */
    hd_status (*network_allow_host)(void* context, hd_str session_id, hd_str host_pattern,
                                    uint16_t port, hd_str reason);
    hd_status (*network_bind_secret)(void* context, hd_str session_id, hd_str secret_name,
                                     hd_str host_pattern, hd_str header_name,
                                     hd_str value_template);

    /* Secret stand-ins: the value a session sees in place of the real secret. Shaped
     * like the real one (same prefix), unique per session. The real value never
     * reaches a plugin. */
    hd_status (*secret_stand_in)(void* context, hd_str session_id, hd_str secret_name,
                                 hd_sink out_stand_in, hd_sink out_error);

    /* Containers, always rootless and labelled with the session id. */
    hd_status (*container_spawn)(void* context, const hd_container_spec* spec,
                                 hd_sink out_container_id, hd_sink out_error);
    hd_status (*container_exec)(void* context, hd_str container_id, const hd_str* argv,
                                size_t argc, hd_sink out_output, int32_t* out_exit_code,
                                hd_sink out_error);
    hd_status (*container_stop)(void* context, hd_str container_id, uint32_t grace_ms,
                                hd_sink out_error);

    /* Per-plugin key-value storage, kept in handlerd's database. get returns
     * HD_STATUS_NOT_FOUND for a missing key. */
    hd_status (*storage_get)(void* context, hd_str key, hd_sink out_value);
    hd_status (*storage_set)(void* context, hd_str key, hd_str value);
    hd_status (*storage_remove)(void* context, hd_str key);
} hd_host_api;

/* ---------------------------------------------------------------- plugin calls */

typedef enum hd_launch_mode {
    HD_LAUNCH_INTERACTIVE = 1, /* the harness's own TUI in a PTY */
    HD_LAUNCH_HEADLESS = 2     /* structured: JSON/RPC/ACP on stdio, events parsed */
} hd_launch_mode;

typedef enum hd_start_mode {
    HD_START_LOCKED_DOWN = 1, /* asks before acting; no network beyond the model */
    HD_START_GUARDED = 2,     /* allowed hosts only (the default) */
    HD_START_OPEN = 3         /* any host */
} hd_start_mode;

/* What the host asks a harness (or addon) to start. Filled by the host. */
typedef struct hd_launch_request {
    uint32_t struct_size;
    hd_launch_mode mode;
    hd_start_mode start_mode;
    hd_str session_id;
    hd_str project_path;      /* mounted at the same path inside the container */
    hd_str prompt;            /* may be empty */
    hd_str model;             /* may be empty: the harness default */
    hd_str account_kind;      /* e.g. "anthropic-api-key"; empty: no account */
    const hd_str* extra_args; /* `handler terminal AGENT -- ARGS` */
    size_t extra_arg_count;
    /* A local model server's URL as the container reaches it (accounts of kind
     * llama-cpp and ollama; the proxy leads there); empty otherwise. */
    hd_str account_base_url;
    /* How hard the model thinks, in the harness's own words (a word its describe()
     * lists under "thinking_levels"); empty: the harness's default. */
    hd_str thinking_level;
    /* Minor 1. Non-zero: a conversation (headless only), which takes prompt after prompt:
     * the program's stdin stays open after a turn's RESULT, each later prompt reaches the
     * harness through events_prompt, and events_cancel interrupts a turn. Zero: a
     * one-shot run, whose input handlerd closes after its RESULT. A harness offers
     * conversations by listing "conversation" in its describe()'s "launch_modes". */
    uint32_t conversation;
    /* Minor 1. Non-empty: continue the harness's own conversation of this id (what its
     * parser reported in a SESSION_INFO event's "harnessSessionId") in a new container,
     * from the state kept by keep_session_state. */
    hd_str resume;
    /* Minor 1. The MCP servers a client (an editor over ACP) asked for, as ACP's
     * McpServer[] JSON ([{"name","command","args","env"}] for stdio, {"type":"http",
     * "name","url","headers"}); empty: none. A harness that takes them writes them into
     * its own configuration: stdio servers run inside the container, HTTP ones are
     * reached through the session's proxy under its rules. describe()'s "mcp" lists the
     * transports it honours; handlerd tells the clients of any other. */
    hd_str mcp_servers;
} hd_launch_request;

/* How a plugin describes the container to start. Filled by the host; the plugin calls
 * the functions. */
typedef struct hd_launch_builder {
    uint32_t struct_size;
    void* context;
    void (*set_image)(void* context, hd_str image);
    void (*add_argument)(void* context, hd_str argument);
    void (*set_env)(void* context, hd_str name, hd_str value);
    void (*set_workdir)(void* context, hd_str path);
    /* A host this session must reach (port 0 = any). */
    void (*allow_host)(void* context, hd_str host_pattern, uint16_t port);
    /* Set env `name` to the session's stand-in for `secret_name`. */
    hd_status (*set_env_from_secret)(void* context, hd_str name, hd_str secret_name);
    /* A file written into the container before start (config files). */
    void (*add_file)(void* context, hd_str container_path, hd_str contents, uint32_t mode);
    /* Keep this account's own state (a harness's login, which the harness refreshes) in
     * a folder of the host's, one per account, mounted read-write in every session of
     * that account; env `name` is set to where it is inside. Unlike a key, what is in it
     * is readable inside the container. A session without an account fails to start,
     * saying why. */
    hd_status (*keep_account_state)(void* context, hd_str env_name);
    /* Bytes the program finds on its stdin when it starts (headless only), for a
     * harness whose stdin is a protocol (Claude Code's stream-json): its first message.
     * Calls concatenate. The program's stdin then stays open for the event parser's
     * answers (hd_event_sink.write_input) until the parser closes it. */
    void (*add_input)(void* context, hd_str bytes);
    /* Minor 1. Keep the harness's own state of this session (its transcript, so that a
     * later container can resume the conversation) in a folder of the host's, one per
     * session, mounted read-write and deleted with the session; env `name` is set to
     * where it is inside. Like the project, it is readable inside the container. */
    hd_status (*keep_session_state)(void* context, hd_str env_name);
} hd_launch_builder;

/* How a plugin adds to its image. Steps run as shell commands in a build container. */
typedef struct hd_recipe_builder {
    uint32_t struct_size;
    void* context;
    void (*add_run)(void* context, hd_str shell_command);
    void (*set_env)(void* context, hd_str name, hd_str value);
} hd_recipe_builder;

/* Normalised session events (docs/contracts.md gives each payload's JSON shape; the
 * vocabulary follows ACP's session/update). */
typedef enum hd_event_kind {
    HD_EVENT_USER_PROMPT = 1,
    HD_EVENT_AGENT_MESSAGE_CHUNK = 2,
    HD_EVENT_AGENT_THOUGHT_CHUNK = 3,
    HD_EVENT_TOOL_CALL = 4,
    HD_EVENT_TOOL_CALL_UPDATE = 5,
    HD_EVENT_PLAN = 6,
    HD_EVENT_PERMISSION_REQUEST = 7,
    HD_EVENT_MODE_CHANGED = 8,
    HD_EVENT_RESULT = 9,
    HD_EVENT_ERROR = 10,
    /* A PERMISSION_REQUEST was answered. handlerd records it when a client answers; a
     * parser emits it when the harness withdraws a request itself. */
    HD_EVENT_PERMISSION_ANSWER = 11,
    /* Minor 1. What the harness says of the session: {"harnessSessionId":"..."} (the
     * id its resume takes), {"title":"..."}; either key may be missing. */
    HD_EVENT_SESSION_INFO = 12,
    /* Minor 1. The harness's slash commands: {"availableCommands":[{"name","description"}]}. */
    HD_EVENT_AVAILABLE_COMMANDS = 13,
    /* Minor 1. The context in use: {"used":N,"size":N} (tokens), optional "cost". */
    HD_EVENT_USAGE = 14
} hd_event_kind;

typedef struct hd_event_sink {
    uint32_t struct_size;
    void* context;
    void (*emit)(void* context, hd_event_kind kind, hd_str json_payload);
    /* For a harness whose stdin is a protocol: bytes for the program's stdin (a reply
     * to its control request, a client's answer), and the end of its input (a one-shot
     * run whose turn is over). NULL in a host that launched the program with its stdin
     * closed. */
    void (*write_input)(void* context, hd_str bytes);
    void (*close_input)(void* context);
} hd_event_sink;

/* A harness. Every pointer may be NULL (= unsupported) except launch. */
typedef struct hd_harness_vtable {
    uint32_t struct_size;
    /* JSON object: {"default_hosts":[...], "credentials":[...], "models":[...],
     * "modes":[...]}; see docs/contracts.md. */
    hd_status (*describe)(void* instance, hd_sink out_json, hd_sink out_error);
    hd_status (*image_recipe)(void* instance, const hd_recipe_builder* recipe,
                              hd_sink out_error);
    hd_status (*launch)(void* instance, const hd_launch_request* request,
                        const hd_launch_builder* builder, hd_sink out_error);
    /* Headless output to events: one parser per session, fed the harness's stdout. */
    hd_status (*events_open)(void* instance, hd_str session_id, void** out_parser,
                             hd_sink out_error);
    hd_status (*events_feed)(void* parser, hd_str bytes, const hd_event_sink* sink,
                             hd_sink out_error);
    void (*events_close)(void* parser);
    /* A client's answer to a PERMISSION_REQUEST this parser emitted: `request_json` is
     * that event's payload as emitted, `answer_json` {"optionId":"..."} with one of its
     * options (handlerd checked that). The parser tells the harness through
     * sink->write_input. NULL: this harness takes no answers. */
    hd_status (*events_answer)(void* parser, hd_str request_json, hd_str answer_json,
                               const hd_event_sink* sink, hd_sink out_error);
    /* A prompt for a harness whose stdin is its protocol, as the USER_PROMPT event's
     * payload ({"content":{"type":"text","text":"..."}}): a headless run's first, given
     * right after events_open and before the program starts. The parser writes it in the
     * harness's protocol through sink->write_input (after the launch's add_input bytes).
     * NULL: the harness takes its prompt on its command line. */
    hd_status (*events_prompt)(void* parser, hd_str prompt_json, const hd_event_sink* sink,
                               hd_sink out_error);
    /* Minor 1. Interrupt the turn that runs (a client cancelled it), in the harness's own
     * way, through sink->write_input. The turn's RESULT then says "cancelled". NULL: the
     * harness cannot be interrupted (handlerd refuses a cancel). */
    hd_status (*events_cancel)(void* parser, const hd_event_sink* sink, hd_sink out_error);
    /* Minor 1. Change a setting of the live conversation: `name` "model", "mode" (one of
     * describe()'s "modes") or "thinking_level", `value` in the harness's words. Writes
     * through sink->write_input and emits MODE_CHANGED when the harness confirms.
     * HD_STATUS_UNSUPPORTED: not while it runs (handlerd says it applies on resume). */
    hd_status (*events_set)(void* parser, hd_str name, hd_str value, const hd_event_sink* sink,
                            hd_sink out_error);
    /* Minor 1. Like events_open, for a session whose harness already runs: handlerd was
     * restarted, and the new parser meets the harness mid-conversation. `harness_session_id`
     * is the last SESSION_INFO's "harnessSessionId" (empty: none came), which a parser
     * whose protocol names its conversation (Codex's thread) needs for the next prompt.
     * NULL: events_open is used. */
    hd_status (*events_reopen)(void* instance, hd_str session_id, hd_str harness_session_id,
                               void** out_parser, hd_sink out_error);
} hd_harness_vtable;

/* An addon: adds to the image and to every session it is enabled for. */
typedef struct hd_addon_vtable {
    uint32_t struct_size;
    hd_status (*describe)(void* instance, hd_sink out_json, hd_sink out_error);
    hd_status (*image_recipe)(void* instance, const hd_recipe_builder* recipe,
                              hd_sink out_error);
    hd_status (*contribute)(void* instance, const hd_launch_request* request,
                            const hd_launch_builder* builder, hd_sink out_error);
} hd_addon_vtable;

/* What hd_plugin_entry returns: static data in the plugin. */
typedef struct hd_plugin_info {
    uint32_t struct_size;
    uint16_t abi_major;  /* the HD_ABI_MAJOR the plugin was compiled against */
    uint16_t abi_minor;  /* the HD_ABI_MINOR the plugin was compiled against */
    hd_plugin_kind kind;
    const char* id;          /* NUL-terminated, static; must equal the manifest's id */
    const char* version;     /* NUL-terminated, static; semantic version */
    const char* name;        /* NUL-terminated, static; for people */
    const char* description; /* NUL-terminated, static; may be NULL */
    /* Makes the plugin's instance. The host keeps `host` alive as long as the
     * instance; the plugin may keep the pointer. If create does not return
     * HD_STATUS_OK, the host releases `host` at once and never calls the plugin again.
     * The instance may be NULL for a plugin that keeps no state. */
    hd_status (*create)(const hd_host_api* host, void** out_instance, hd_sink out_error);
    void (*destroy)(void* instance); /* may be NULL: nothing to release */
    const hd_harness_vtable* harness; /* set iff kind == HD_PLUGIN_KIND_HARNESS */
    const hd_addon_vtable* addon;     /* set iff kind == HD_PLUGIN_KIND_ADDON */
} hd_plugin_info;

/* The entry point's type. The host passes its own ABI version so a plugin may adapt;
 * it returns NULL if it cannot work with that host. */
typedef const hd_plugin_info* (*hd_plugin_entry_fn)(uint16_t host_abi_major,
                                                    uint16_t host_abi_minor);

/* Declared here so the compiler checks a plugin's definition against it (the C++
 * wrapper's HD_HARNESS_PLUGIN / HD_ADDON_PLUGIN define it). The host never links it:
 * it looks the symbol up by name in each plugin. */
HD_EXPORT const hd_plugin_info* hd_plugin_entry(uint16_t host_abi_major,
                                                uint16_t host_abi_minor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HANDLER_SDK_H */
