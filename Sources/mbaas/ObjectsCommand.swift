import ArgumentParser
import Foundation
import MBaaSCore
import MBaaSLocal
import MBaaSSync
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
// `struct stat` is owned by whichever C module loaded <sys/stat.h> first; once a dependency (GRDB, swift-crypto) has
// loaded libdispatch's headers that is CDispatch, and member import visibility then asks for it by name (release
// builds fail without it).
#if canImport(CDispatch)
import CDispatch
#endif
// With swift-nio-ssl in the graph (the emulator's TLS) the owner may be CoreFoundation instead.
#if canImport(CoreFoundation)
import CoreFoundation
#endif

/// `mbaas objects create|get|update|delete|query`.
struct ObjectsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objects", abstract: "Create, read, update, delete and query records.",
        subcommands: [Create.self, Get.self, Update.self, Delete.self, QueryRecords.self, RepairACL.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a record from neutral JSON fields and print it.",
            discussion: #"Example: mbaas objects create sqlite:demo.db Memo '{"title":"rent","money":50,"due":{"__type":"Date","iso":"2025-04-01T00:00:00.000Z"}}'"#)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL, e.g. sqlite:demo.db") var url: String
        @Argument(help: "Class name") var className: String
        @Argument(help: "Fields as a neutral JSON object, @FILE, or - for stdin") var fields: String
        @Option(help: "Use this id instead of a generated one") var id: String?
        @Option(help: #"ACL as neutral JSON, e.g. {"*":{"read":true}}. Default on sqlite: private to the logged-in user (public for anonymous records)"#) var acl: String?
        @Flag(name: .customLong("public-read"), help: "Logged in without --acl: everyone may read, only you may write")
        var publicRead = false

        func validate() throws {
            if publicRead, acl != nil { throw ValidationError("--public-read and --acl exclude each other") }
        }

        func run() async throws {
            try await runReportingErrors {
                var record = Record(className: className, id: id, acl: try parseACLArgument(acl),
                                    fields: try Record.fields(fromJSONText: try readArgument(fields, name: "fields")))
                let (created, json) = try await OpenedBackend.with(url, global) { backend in
                    if publicRead, let owner = await backend.session?.userId { record.acl = .publicRead(owner: owner) }
                    let created = try await backend.create(record)
                    return (created, try await printedJSON(of: created, on: backend))
                }
                emit(json, table: recordTable(created), format: global.resolvedFormat)
            }
        }
    }

    struct RepairACL: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "repair-acl",
            abstract: "Administrative: replace the ACL of a record nobody can reach (sqlite: only).",
            discussion: """
                The embedded store has no master key: its administrator is whoever owns the database file. This \
                command works only on sqlite: URLs and only for the file's owner (or root); it sets the ACL \
                whatever the current one grants, without a session. The new ACL must grant someone access.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL (sqlite: only)") var url: String
        @Argument(help: "Class name") var className: String
        @Argument(help: "Record id") var id: String
        @Argument(help: #"The new ACL as neutral JSON, e.g. {"<userId>":{"read":true,"write":true}}"#) var acl: String

        func run() async throws {
            try await runReportingErrors {
                let newACL = try ACL(json: parseJSONArgument(acl, name: "acl"))
                let record = try await OpenedBackend.with(url, global, access: .write) { backend in
                    guard let local = backend as? LocalBackend else {
                        throw MBaaSError(.unsupported, "repair-acl works on the embedded sqlite: store only; other backends have their own administration (a master key, a console)")
                    }
                    try checkOwnsDatabaseFile(local.path)
                    return try await local.repairACL(className: className, id: id, acl: newACL)
                }
                emit(record.json, table: recordTable(record), format: global.resolvedFormat)
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print one record.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: "Class name") var className: String
        @Argument(help: "Record id") var id: String

        func run() async throws {
            try await runReportingErrors {
                let (record, json) = try await OpenedBackend.with(url, global, access: .read) { backend in
                    let record = try await backend.get(className: className, id: id)
                    return (record, try await printedJSON(of: record, on: backend))
                }
                emit(json, table: recordTable(record), format: global.resolvedFormat)
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change some fields of a record and print the whole record.",
            discussion: """
                Fields are neutral JSON values to set. Parse-style operations also work: \
                {"money":{"__op":"Increment","amount":5}}, {"old":{"__op":"Delete"}}, \
                {"tags":{"__op":"Add"|"AddUnique"|"Remove","objects":["a"]}}.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: "Class name") var className: String
        @Argument(help: "Record id") var id: String
        @Argument(help: "Fields to change, as a neutral JSON object, @FILE, or - for stdin") var fields: String
        @Option(name: .customLong("expected-version"), parsing: .unconditional, help: "Fail with a conflict unless the record is at this version")
        var expectedVersion: String?
        @Option(help: "Replace the ACL (neutral JSON)") var acl: String?

        func run() async throws {
            try await runReportingErrors {
                let update = RecordUpdate(changes: try parseChanges(readArgument(fields, name: "fields")), expectedVersion: expectedVersion,
                                          acl: try parseACLArgument(acl))
                let (record, json) = try await OpenedBackend.with(url, global, access: .write) { backend in
                    let record = try await backend.update(className: className, id: id, update)
                    return (record, try await printedJSON(of: record, on: backend))
                }
                emit(json, table: recordTable(record), format: global.resolvedFormat)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a record.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: "Class name") var className: String
        @Argument(help: "Record id") var id: String
        @Option(name: .customLong("expected-version"), parsing: .unconditional, help: "Fail with a conflict unless the record is at this version")
        var expectedVersion: String?

        func run() async throws {
            try await runReportingErrors {
                try await OpenedBackend.with(url, global, access: .write) {
                    try await $0.delete(className: className, id: id, expectedVersion: expectedVersion)
                }
                emit(.object(["class": .string(className), "id": .string(id), "deleted": true]),
                     table: "deleted \(className)/\(id)", format: global.resolvedFormat)
            }
        }
    }

    struct QueryRecords: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "query", abstract: "Find records, page after page.",
            discussion: #"""
                --where takes the neutral query JSON: {"money":{"$gte":50},"$or":[{"tag":{"$in":["a","b"]}},{"note":{"$exists":false}}]} \#
                (operators $eq $ne $lt $lte $gt $gte $in $nin $exists $prefix $regex(+$options) $all, $and $or $not), \#
                or @FILE, or - for stdin. Without --limit one page of the backend's default size (sqlite: 100) is \#
                printed; --all prints every match. Larger limits are fetched page by page (--page-size, sqlite: at \#
                most 1000; it does not change how many are printed). JSON and NDJSON output are streamed: records are \#
                printed as pages arrive (--format ndjson: one compact record per line, then {"count":N} with --count). \#
                Limits (sqlite): 500 clauses per $and/$or, 16 levels of nesting ($not counts two), 32 sort keys, 10000 list values, \#
                250 ms per value for $regex.
                """#)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Backend URL") var url: String
        @Argument(help: "Class name") var className: String
        @Option(name: .customLong("where"), help: "Filter, as neutral query JSON, @FILE, or - for stdin") var whereJSON: String?
        @Option(parsing: .unconditional, help: "Sort keys, comma-separated; '-' for descending: -money,title") var order: String?
        @Option(parsing: .unconditional, help: "At most this many records") var limit: Int?
        @Option(parsing: .unconditional, help: "Skip this many records first") var skip: Int?
        @Option(help: "Only these fields, comma-separated") var keys: String?
        @Option(name: .customLong("page-size"), parsing: .unconditional, help: "Records per request") var pageSize: Int?
        @Flag(help: "Also count every match (ignoring limit and skip)") var count = false
        @Flag(help: "Print every match") var all = false

        func validate() throws {
            if let limit, limit < 0 { throw ValidationError("--limit must be >= 0") }
            if let skip, skip < 0 { throw ValidationError("--skip must be >= 0") }
            if let pageSize, pageSize < 1 { throw ValidationError("--page-size must be >= 1") }
            if all, limit != nil { throw ValidationError("--all and --limit exclude each other") }
        }

        func run() async throws {
            try await runReportingErrors {
                var query = try whereJSON.map { try Query.parse(className: className, whereJSON: readArgument($0, name: "where")) } ?? Query(className)
                if let order {
                    do { query.sort = try SortKey.strictList(order) } catch { throw MBaaSError(.invalidRequest, "--order: \(MBaaSError.wrap(error).message)") }
                }
                query.skip = skip
                query.keys = try keys.map(parseKeys)
                let format = global.resolvedFormat
                var collected: [Record] = []
                var printer = RecordStreamPrinter(format: format)
                let total: Int? = try await OpenedBackend.with(url, global, access: .read) { backend in
                    if let pageSize, pageSize > backend.capabilities.maxPageSize {
                        throw MBaaSError(.invalidRequest, "--page-size \(pageSize) is above this backend's maximum of \(backend.capabilities.maxPageSize) records per request")
                    }
                    let pageLimit = min(pageSize ?? backend.capabilities.maxPageSize, backend.capabilities.maxPageSize)
                    query.limit = all ? nil : (limit ?? backend.capabilities.defaultPageSize)
                    // The count comes first (its key sorts first in the JSON document), then records as they arrive.
                    let total = count ? try await backend.count(query) : nil
                    printer.begin(count: total)
                    if query.limit != 0 {
                        for try await record in backend.records(matching: query, pageSize: min(pageLimit, query.limit ?? pageLimit)) {
                            if format == .table { collected.append(record) } else { printer.record(record, json: try await printedJSON(of: record, on: backend)) }
                        }
                    }
                    return total
                }
                if format == .table {
                    var table = recordsTable(collected) + "\n(\(collected.count) record\(collected.count == 1 ? "" : "s"))"
                    if let total { table += "\ncount: \(total)" }
                    emit(.null, table: table, format: .table)
                } else {
                    printer.end(count: total)
                }
            }
        }
    }
}

/// Prints query results as they arrive: `--format json` as one document `{"count":N,"results":[…]}` (pretty,
/// keys sorted, the same document the non-streaming form printed), `--format ndjson` as one compact record per
/// line (then `{"count":N}` when counting). Output is buffered up to 64 KiB between writes.
struct RecordStreamPrinter {
    let format: OutputFormat
    private var buffer = Data()
    private var first = true

    init(format: OutputFormat) { self.format = format }

    mutating func begin(count: Int?) {
        guard format == .json else { return }
        append("{\n")
        if let count { append("  \"count\": \(count),\n") }
        append("  \"results\": [")
    }

    /// `json`: the record's JSON as printed (``printedJSON(of:on:)``); its neutral JSON when `nil`.
    mutating func record(_ record: Record, json: JSON? = nil) {
        let json = json ?? record.json
        switch format {
        case .ndjson:
            append(json.printed([.sortedKeys]) + "\n")
        default:
            let pretty = json.printed([.pretty, .sortedKeys])
            let indented = pretty.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
            append((first ? "\n" : ",\n") + indented)
        }
        first = false
        if buffer.count >= 64 * 1024 { flush() }
    }

    mutating func end(count: Int?) {
        switch format {
        case .ndjson:
            if let count { append(JSON.object(["count": .int(Int64(count))]).printed() + "\n") }
        default:
            append(first ? "]\n}\n" : "\n  ]\n}\n")
        }
        flush()
    }

    private mutating func append(_ text: String) { buffer.append(contentsOf: text.utf8) }

    private mutating func flush() {
        if !buffer.isEmpty { Terminal.writeOut(buffer) }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Parses `objects update` fields: neutral values to set, or `{"__op":...}` operations (the core's neutral form,
/// ``RecordUpdate/init(changes:expectedVersion:acl:)``).
/// Decimals a double cannot keep as written and Pointers to no class are refused, as for `create`.
func parseChanges(_ text: String) throws(MBaaSError) -> [String: FieldOperation] {
    let json: JSON
    do { json = try JSON.parse(text, exactNumbers: true) } catch { throw MBaaSError(.invalidRequest, "fields: \(error)") }
    guard let object = json.objectValue else {
        throw MBaaSError(.invalidRequest, "fields must be a JSON object")
    }
    let changes = try RecordUpdate(changes: object).changes
    for (field, change) in changes {
        switch change {
        case .set(let value), .increment(let value): try Record.checkInput(value, path: field)
        case .add(let values), .addUnique(let values), .remove(let values):
            for value in values { try Record.checkInput(value, path: field) }
        default: break
        }
    }
    return changes
}

/// `--keys a,b`: field names separated by commas; an empty list or an empty name is refused (`invalidRequest`).
func parseKeys(_ text: String) throws(MBaaSError) -> [String] {
    var keys: [String] = []
    for part in text.split(separator: ",", omittingEmptySubsequences: false) {
        let key = part.trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty else {
            throw MBaaSError(.invalidRequest, "--keys: '\(text)' has an empty field name; give field names separated by commas: title,money")
        }
        do { try SortKey.checkFieldPath(key, in: key) } catch { throw MBaaSError(.invalidRequest, "--keys: \(error.message)") }
        keys.append(key)
    }
    return keys
}

/// Administrative commands on the embedded store need the rights of the database file's owner (or root).
func checkOwnsDatabaseFile(_ path: String) throws(MBaaSError) {
    guard path != ":memory:" else { return }
    var info = stat()
    guard stat(path, &info) == 0 else {
        throw MBaaSError(.localIO, "cannot inspect the database file '\(path)': \(String(cString: strerror(errno)))")
    }
    let me = geteuid()
    guard me == 0 || me == info.st_uid else {
        throw MBaaSError(.forbidden, "only the owner of '\(path)' (uid \(info.st_uid)) or root may repair ACLs; you are uid \(me)")
    }
}

/// The JSON a command prints for a record read or written through `backend`: its neutral JSON, plus the
/// `"syncStatus"` member when the backend is an offline replica (`replica:PATH`; ``ReplicaBackend/json(of:)``).
func printedJSON(of record: Record, on backend: any Backend) async throws -> JSON {
    if let replica = backend as? ReplicaBackend { return try await replica.json(of: record) }
    return record.json
}
