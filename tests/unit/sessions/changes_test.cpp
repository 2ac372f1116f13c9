// The Changes container's spec and script (what git is told), and the parsers of what
// it prints: untrusted, so hostile names and cut or malformed output are fed to them.
#include "sessions/changes.hpp"
#include "sessions/changes_service.hpp"

#include "core/utf8.hpp"
#include "support/fake_container_runtime.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <future>

namespace handler::sessions::changes {
namespace {

namespace json = boost::json;
using namespace std::string_literals;

// The container's output, as the script prints it: "NAME LENGTH\n" then the bytes.
std::string output(std::map<std::string, std::string> parts) {
    std::string text;
    for (const char* name : {"mode", "head", "status", "numstat", "patch", "sizes", "files", "err"}) {
        const std::string& bytes = parts[name];
        text += std::string(name) + " " + std::to_string(bytes.size()) + "\n" + bytes;
    }
    return text;
}

const std::string kHead = "0123456789abcdef0123456789abcdef01234567";

std::string patch_for(const std::string& path, int lines) {
    std::string text = "diff --git a/" + path + " b/" + path + "\nindex 1..2 100644\n--- a/" + path + "\n+++ b/" +
                       path + "\n@@ -1 +1," + std::to_string(lines) + " @@\n";
    for (int i = 0; i < lines; ++i) text += "+line " + std::to_string(i) + "\n";
    return text;
}

TEST(ChangesSpec, MountsTheProjectReadOnlyWithNoNetworkAndRunsTheFixedScript) {
    Limits limits;
    auto spec = container_spec("localhost/handler-base:1", "/home/u/app", "changes-s_1-7-1", 1'700'000'123'456, limits);
    EXPECT_TRUE(spec.project_read_only);
    EXPECT_EQ(spec.network, runtime::NetworkMode::none);
    EXPECT_EQ(spec.project_path, "/home/u/app");
    EXPECT_TRUE(spec.read_only_mounts.empty());
    EXPECT_TRUE(spec.control_dir.empty() && spec.helper_dir.empty() && spec.account_state_dir.empty() &&
                spec.session_state_dir.empty() && spec.trust_bundle.empty())
        << "nothing of handlerd's is mounted";
    ASSERT_EQ(spec.argv.size(), 8u);
    EXPECT_EQ(spec.argv[0], "sh");
    EXPECT_EQ(spec.argv[1], "-c");
    EXPECT_EQ(spec.argv[2], script());
    EXPECT_EQ(spec.argv[4], "/home/u/app");
    EXPECT_EQ(spec.argv[5], "1700000123") << "created_at in whole seconds";
    EXPECT_EQ(spec.argv[6], std::to_string(limits.max_part_bytes));
    EXPECT_EQ(spec.argv[7], std::to_string(limits.max_files));
}

TEST(ChangesSpec, GitRunsNothingTheRepositoryNames) {
    const std::string text(script());
    // A git folder of its own, in the container's /tmp: the project's config, hooks and
    // info/attributes are never read.
    EXPECT_NE(text.find("T=/tmp/handler-changes"), std::string::npos);
    EXPECT_NE(text.find("G=\"$T/git\""), std::string::npos);
    EXPECT_NE(text.find("--git-dir=\"$G\""), std::string::npos);
    EXPECT_EQ(text.find("--git-dir=\"$P"), std::string::npos);
    EXPECT_EQ(text.find("cp .git/config"), std::string::npos);
    EXPECT_EQ(text.find("info/attributes"), std::string::npos);
    EXPECT_EQ(text.find(".git/hooks"), std::string::npos);
    EXPECT_NE(text.find("printf '[core]\\n\\trepositoryformatversion = 0\\n' > \"$G/config\""), std::string::npos);
    for (const char* flag : {"-c core.fsmonitor=false", "-c core.hooksPath=/dev/null", "-c core.attributesFile=/dev/null",
                             "-c core.untrackedCache=false", "-c safe.directory='*'", "-c protocol.allow=never",
                             "--no-ext-diff", "--no-textconv", "--no-optional-locks", "--literal-pathspecs",
                             "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
                             "HOME=\"$T/home\"", "timeout 20 git"})
        EXPECT_NE(text.find(flag), std::string::npos) << flag;
    for (const char* variable : {"GIT_EXTERNAL_DIFF", "GIT_CONFIG_PARAMETERS", "GIT_SSH_COMMAND", "GIT_ASKPASS"})
        EXPECT_NE(text.find(variable), std::string::npos) << variable << " is unset";
    // Each part is capped inside before it is printed.
    EXPECT_NE(text.find("head -c \"$CAP\" > \"$T/patch\""), std::string::npos);
    EXPECT_NE(text.find("head -c \"$CAP\" > \"$T/status\""), std::string::npos);
}

TEST(ChangesParse, PorcelainV2Entries) {
    const std::string text = "# branch.oid abc\0"s
                             "1 .M N... 100644 100644 100644 aaa bbb src/main.cpp\0"s
                             "1 A. N... 000000 100644 100644 000 bbb new file.txt\0"s
                             "1 .D N... 100644 100644 000000 aaa aaa gone\0"s
                             "2 R. N... 100644 100644 100644 aaa aaa R100 to\0from\0"s
                             "u UU N... 100644 100644 100644 100644 a b c both\0"s
                             "? untracked dir/x\0"s
                             "! ignored\0"s;
    bool cut = false;
    auto entries = parse_porcelain_v2(text, cut);
    ASSERT_TRUE(entries) << entries.error().message;
    EXPECT_FALSE(cut);
    ASSERT_EQ(entries->size(), 6u);
    EXPECT_EQ((*entries)[0].path, "src/main.cpp");
    EXPECT_EQ((*entries)[0].status, "modified");
    EXPECT_EQ((*entries)[1].path, "new file.txt") << "a path may hold spaces";
    EXPECT_EQ((*entries)[1].status, "added");
    EXPECT_EQ((*entries)[2].status, "deleted");
    EXPECT_EQ((*entries)[3].path, "to");
    EXPECT_EQ((*entries)[3].status, "renamed");
    EXPECT_EQ((*entries)[4].status, "unmerged");
    EXPECT_EQ((*entries)[5].path, "untracked dir/x");
    EXPECT_EQ((*entries)[5].status, "untracked");
}

TEST(ChangesParse, HostileNamesAreRefusedOrKeptAsBytes) {
    for (const std::string& bad : {"../escape"s, "a/../../b"s, "/etc/passwd"s, "a//b"s, "./a"s, "a/."s, ""s,
                                   std::string(5000, 'x')}) {
        bool cut = false;
        auto status = parse_porcelain_v2("? " + bad + "\0"s, cut);
        EXPECT_FALSE(status) << "'" << bad.substr(0, 40) << "'";
        auto numstat = parse_numstat("1\t2\t" + bad + "\0"s, cut);
        if (!bad.empty()) {
            EXPECT_FALSE(numstat) << "'" << bad.substr(0, 40) << "'";
        }
        if (status) continue;
        EXPECT_NE(status.error().message.find("record 1"), std::string::npos) << status.error().message;
    }
    // A newline, bad UTF-8 and a name of 4096 bytes are names like others: kept, and
    // made valid UTF-8 only when sent.
    const std::string odd = "new\nline \xff\xfe name..txt";
    bool cut = false;
    auto numstat = parse_numstat("3\t0\t" + odd + "\0"s + "1\t1\t" + std::string(4096, 'y') + "\0"s, cut);
    ASSERT_TRUE(numstat) << numstat.error().message;
    ASSERT_EQ(numstat->size(), 2u);
    EXPECT_EQ((*numstat)[0].path, odd);

    auto changes = parse_output(output({{"mode", "git"}, {"head", kHead + "\n"}, {"status", "? " + odd + "\0"s},
                                        {"numstat", "3\t0\t" + odd + "\0"s}, {"patch", patch_for(odd, 3)}}),
                                Limits{});
    ASSERT_TRUE(changes) << changes.error().message;
    const std::string body = json::serialize(to_json(*changes));
    EXPECT_TRUE(is_valid_utf8(body));
    const auto parsed = json::parse(body);
    const auto& file = parsed.at("files").at(0);
    EXPECT_EQ(std::string(file.at("path").as_string()), "new\nline \xEF\xBF\xBD\xEF\xBF\xBD name..txt");
    EXPECT_EQ(file.at("status").as_string(), "untracked");
}

TEST(ChangesParse, NumstatCountsBinaryRenamesAndCutRecords) {
    bool cut = false;
    auto entries = parse_numstat("10\t2\ta.txt\0-\t-\timage.png\0"s "1\t1\t\0old\0new\0"s "4\t4\tcut-sh"s, cut);
    ASSERT_TRUE(entries) << entries.error().message;
    EXPECT_TRUE(cut) << "the last record had no NUL: cut by the cap";
    ASSERT_EQ(entries->size(), 3u);
    EXPECT_EQ((*entries)[0].added, 10);
    EXPECT_EQ((*entries)[0].removed, 2);
    EXPECT_TRUE((*entries)[1].binary);
    EXPECT_EQ((*entries)[2].path, "new");
    for (const std::string& bad : {"x\t1\ta\0"s, "1\ta\0"s, "-1\t1\ta\0"s, "99999999999999999999\t1\ta\0"s}) {
        bool c = false;
        EXPECT_FALSE(parse_numstat(bad, c)) << bad;
    }
}

TEST(ChangesParse, PatchSplitsOnlyAtFileHeaders) {
    const std::string first = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+diff --git a/x b/x\n";
    const std::string second = patch_for("b", 2);
    const std::string patch = first + second;
    auto sections = split_patch(patch);
    ASSERT_EQ(sections.size(), 2u);
    EXPECT_EQ(sections[0], first);
    EXPECT_EQ(sections[1], second);
    EXPECT_TRUE(split_patch("no header here\n").empty());
}

TEST(ChangesParse, OutputWithModifiedAddedBinaryAndLargeFiles) {
    Limits limits;
    limits.max_file_diff_bytes = 2000;
    const std::string big = patch_for("big.log", 400);
    const std::string output_text =
        output({{"mode", "git"},
                {"head", kHead + "\n"},
                {"status", "1 .M N... 100644 100644 100644 a b hello.txt\0? added.txt\0? blob.bin\0? big.log\0"s},
                {"numstat", "1\t1\thello.txt\0"s "2\t0\tadded.txt\0"s "400\t0\tbig.log\0"s "-\t-\tblob.bin\0"s},
                {"patch", patch_for("hello.txt", 1) + patch_for("added.txt", 2) + big +
                              "diff --git a/blob.bin b/blob.bin\nBinary files /dev/null and b/blob.bin differ\n"},
                {"sizes", "6\thello.txt\0" "14\tadded.txt\0" "9000\tbig.log\0" "3000\tblob.bin\0"s}});
    auto changes = parse_output(output_text, limits);
    ASSERT_TRUE(changes) << changes.error().message;
    EXPECT_TRUE(changes->git);
    EXPECT_EQ(changes->head, kHead);
    EXPECT_FALSE(changes->truncated);
    ASSERT_EQ(changes->files.size(), 4u);
    const auto& added = changes->files[0];
    EXPECT_EQ(added.path, "added.txt");
    EXPECT_EQ(added.status, "untracked");
    EXPECT_EQ(added.added, 2);
    EXPECT_EQ(added.size, 14);
    ASSERT_TRUE(added.diff);
    EXPECT_EQ(*added.diff, patch_for("added.txt", 2));
    const auto& large = changes->files[1];
    EXPECT_EQ(large.path, "big.log");
    EXPECT_FALSE(large.diff) << "over the per-file cap";
    EXPECT_NE(large.summary.find("400 lines changed"), std::string::npos) << large.summary;
    const auto& binary = changes->files[2];
    EXPECT_TRUE(binary.binary);
    EXPECT_FALSE(binary.diff);
    EXPECT_FALSE(binary.added);
    EXPECT_EQ(binary.size, 3000);
    EXPECT_EQ(binary.summary, "binary");
    EXPECT_EQ(changes->files[3].status, "modified");
    EXPECT_EQ(changes->files[3].diff.value_or(""), patch_for("hello.txt", 1));

    const auto body = to_json(*changes);
    EXPECT_EQ(body.at("limits").at("max_file_diff_bytes").as_uint64(), 2000u);
    EXPECT_FALSE(body.at("files").at(2).as_object().contains("diff"));
    EXPECT_TRUE(body.at("files").at(2).at("added").is_null());
}

TEST(ChangesParse, CapsOnFilesAndOnAllDiffsTogether) {
    Limits limits;
    limits.max_files = 3;
    limits.max_diff_bytes = 200;
    std::string numstat, patch;
    for (int i = 0; i < 5; ++i) {
        numstat += "2\t0\tf" + std::to_string(i) + "\0"s;
        patch += patch_for("f" + std::to_string(i), 2);
    }
    auto changes = parse_output(output({{"mode", "git"}, {"numstat", numstat}, {"patch", patch}}), limits);
    ASSERT_TRUE(changes) << changes.error().message;
    EXPECT_TRUE(changes->truncated);
    ASSERT_EQ(changes->files.size(), 3u);
    EXPECT_TRUE(changes->head.empty()) << "no commit yet";
    std::size_t sent = 0, with_diff = 0;
    for (const auto& file : changes->files)
        if (file.diff) sent += file.diff->size(), ++with_diff;
    EXPECT_LE(sent, 200u);
    EXPECT_GE(with_diff, 1u);
    EXPECT_LT(with_diff, 3u);
    EXPECT_GE(changes->notes.size(), 2u);
}

TEST(ChangesParse, ADiffThatDoesNotMatchItsFilesIsLeftOut) {
    auto changes = parse_output(output({{"mode", "git"}, {"numstat", "1\t0\ta\0" "1\t0\tb\0"s},
                                        {"patch", patch_for("a", 1)}}),
                                Limits{});
    ASSERT_TRUE(changes) << changes.error().message;
    ASSERT_EQ(changes->files.size(), 2u);
    EXPECT_FALSE(changes->files[0].diff);
    EXPECT_FALSE(changes->files[1].diff);
}

TEST(ChangesParse, NotGitListsFilesChangedSinceTheStart) {
    Limits limits;
    limits.max_files = 2;
    auto changes = parse_output(output({{"mode", "plain"}, {"files", "5\tb.txt\0" "12\tsub/a.txt\0"s}}), limits);
    ASSERT_TRUE(changes) << changes.error().message;
    EXPECT_FALSE(changes->git);
    EXPECT_FALSE(changes->truncated);
    ASSERT_EQ(changes->files.size(), 2u);
    EXPECT_EQ(changes->files[0].path, "b.txt");
    EXPECT_EQ(changes->files[0].size, 5);
    EXPECT_FALSE(changes->files[0].diff);
    auto more = parse_output(output({{"mode", "plain"}, {"files", "1\ta\0" "1\tb\0" "1\tc\0"s}}), limits);
    ASSERT_TRUE(more);
    EXPECT_TRUE(more->truncated);
    EXPECT_EQ(more->files.size(), 2u);
    EXPECT_FALSE(parse_output(output({{"mode", "plain"}, {"files", "1\t../x\0"s}}), limits));
}

TEST(ChangesParse, MalformedOutputIsRefusedWithWhatWasWrong) {
    const std::string good = output({{"mode", "plain"}});
    EXPECT_TRUE(parse_output(good, Limits{}));
    const std::pair<std::string, std::string> cases[] = {
        {good.substr(0, good.size() - 6), "lacks its part"},
        {"mode 999\nplain", "cut short"},
        {"evil 1\nx" + good, "unexpected part header"},
        {good + "mode 5\nplain", "unexpected part header"},
        {"mode -1\n" + good, "unexpected part header"},
        {std::string(100, 'm'), "malformed part header"},
        {output({{"mode", "bash"}}), "neither git nor plain"},
        {output({{"mode", "git"}, {"head", "$(reboot)\n"}}), "not a commit id"},
        {output({{"mode", "git"}, {"status", "Z what\0"s}}), "unknown kind"},
    };
    for (const auto& [text, expected] : cases) {
        auto parsed = parse_output(text, Limits{});
        ASSERT_FALSE(parsed) << expected;
        EXPECT_NE(parsed.error().message.find(expected), std::string::npos) << parsed.error().message;
    }
}

// The service over a fake runtime: the spec it runs, its answer, a failing container.
TEST(ChangesServiceTest, RunsTheTaskAndAnswersOnItsWorker) {
    testing::FakeContainerRuntime runtime;
    runtime.images.insert("localhost/handler-base:1");
    runtime.task_handler = [](const runtime::ContainerSpec&) -> Result<runtime::ExecResult> {
        return runtime::ExecResult{0, output({{"mode", "plain"}, {"files", "4\tnotes.md\0"s}}), ""};
    };
    ChangesService service(runtime, {"localhost/handler-base:1", {}, 4});
    std::promise<Result<json::object>> answered;
    service.changes({"s_abc123", "/tmp", 5000}, [&](Result<json::object> answer) { answered.set_value(std::move(answer)); });
    auto answer = answered.get_future().get();
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_EQ(answer->at("files").at(0).at("path").as_string(), "notes.md");
    ASSERT_EQ(runtime.tasks.size(), 1u);
    const auto& task = runtime.tasks[0];
    EXPECT_TRUE(task.spec.project_read_only);
    EXPECT_EQ(task.spec.network, runtime::NetworkMode::none);
    EXPECT_TRUE(task.spec.session_id.starts_with("changes-s_abc123-")) << task.spec.session_id;
    EXPECT_EQ(task.options.timeout_ms, Limits{}.timeout_ms);
    EXPECT_GE(task.options.output_limit_bytes, 8 * Limits{}.max_part_bytes);

    runtime.task_handler = [](const runtime::ContainerSpec&) -> Result<runtime::ExecResult> {
        return runtime::ExecResult{3, "", "cd: /tmp: \xff no such folder"};
    };
    auto failed = service.compute({"s_abc123", "/tmp", 0});
    ASSERT_FALSE(failed);
    EXPECT_NE(failed.error().message.find("exited 3"), std::string::npos) << failed.error().message;
    EXPECT_TRUE(is_valid_utf8(failed.error().message));
    runtime.fail_next("run_task", make_error(ErrorCode::unavailable, "podman is gone"));
    auto gone = service.compute({"s_abc123", "/tmp", 0});
    ASSERT_FALSE(gone);
    EXPECT_NE(gone.error().message.find("podman is gone"), std::string::npos);
}

} // namespace
} // namespace handler::sessions::changes
