// A small RAII layer over the SQLite C API: a connection, a prepared statement and a
// transaction guard. No ORM: the SQL stays visible in store.cpp, where it is reviewed.
// SQLite errors become Result errors whose code says what the caller can do about them
// (busy → unavailable, constraint → conflict, everything else → internal).
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace handler::store::sqlite {

class Statement {
public:
    Statement() = default;
    Statement(sqlite3* db, sqlite3_stmt* statement) : db_(db), statement_(statement) {}
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&& other) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    ~Statement();

    // Parameters are numbered from 1, as in SQLite. Text is copied, so temporaries are safe.
    void bind(int index, std::int64_t value);
    void bind(int index, std::string_view value);
    void bind(int index, std::nullopt_t);
    void bind_blob(int index, std::string_view value);
    template <class T>
    void bind(int index, const std::optional<T>& value) {
        if (value) bind(index, *value);
        else bind(index, std::nullopt);
    }
    void bind(int index, int value) { bind(index, static_cast<std::int64_t>(value)); }
    void bind(int index, const std::string& value) { bind(index, std::string_view(value)); }
    void bind(int index, const char* value) { bind(index, std::string_view(value)); }

    // true: a row is ready to read; false: the statement is done.
    Result<bool> step();
    // Steps to the end; for statements that return no rows.
    Result<void> run();
    // Back to the start, bindings kept, so a statement can run once per item of a list.
    void reset();

    bool is_null(int column) const;
    std::int64_t integer(int column) const;
    std::string text(int column) const;
    std::optional<std::int64_t> optional_integer(int column) const;
    std::optional<std::string> optional_text(int column) const;

private:
    sqlite3* db_ = nullptr;
    sqlite3_stmt* statement_ = nullptr;
};

class Database {
public:
    Database() = default;
    Database(Database&& other) noexcept;
    Database& operator=(Database&& other) noexcept;
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;
    ~Database();

    // Opens (creating if needed) the file; ":memory:" opens a private in-memory database.
    static Result<Database> open(const std::string& file);

    // Runs one or more statements that take no parameters (schema, pragmas).
    Result<void> exec(std::string_view sql);

    Result<Statement> prepare(std::string_view sql);
    // Prepares and binds `args` to ?1, ?2, ... in order.
    template <class... Args>
    Result<Statement> prepare(std::string_view sql, const Args&... args) {
        auto statement = prepare(sql);
        if (!statement) return statement;
        int index = 0;
        (statement->bind(++index, args), ...);
        return statement;
    }

    std::int64_t last_insert_rowid() const;
    int changes() const;
    sqlite3* handle() const { return db_; }
    const std::string& file() const { return file_; }

private:
    sqlite3* db_ = nullptr;
    std::string file_;
};

// Turns a SQLite result code into our error: `what` says what we were doing.
Error make_sqlite_error(sqlite3* db, int code, std::string_view what);

// BEGIN IMMEDIATE … COMMIT, rolled back on destruction unless committed. IMMEDIATE takes
// the write lock up front, so checks made inside the transaction (does this name exist?)
// still hold when it writes, and two writers never deadlock on a lock upgrade.
class Transaction {
public:
    enum class Kind { read = 1, write };

    static Result<Transaction> begin(Database& db, Kind kind);
    Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
    Transaction& operator=(Transaction&&) = delete;
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    ~Transaction();

    Result<void> commit();

private:
    explicit Transaction(Database* db) : db_(db) {}
    Database* db_ = nullptr; // null once committed or rolled back
};

} // namespace handler::store::sqlite
