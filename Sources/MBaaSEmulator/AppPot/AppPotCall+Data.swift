import Crypto
import Foundation
import MBaaSAppPotWire
import MBaaSCore

/// Tables, rows and queries (reference A6, A7, A8).
///
/// A table's definition is a record of the hidden class `_AppPotSchema` (id: the table name, readable only by
/// the dialect). A row is a record of the table's class with the row's `objectId` as id: its user columns as
/// fields (`varchar` columns as strings, `integer`/`long` as integers, NULL as absent) and the system columns
/// `scopeType`, `createTime`, `updateTime`, `createUserId`, `groupIds`, `serverCreateTime` and
/// `serverUpdateTime` (dates) as fields too. The scope becomes the record's ACL, so the store enforces it.
extension AppPotCall {
    static let schemaClass = "_AppPotSchema"
    /// The hidden class of used `transactionId`s: one record each, id the SHA-256 of the id, readable by no user (the schema role only, as `_AppPotSchema`).
    static let transactionClass = "_AppPotTransaction"
    /// The role that owns the schema records (no user has it: only the dialect's owner view reads them).
    static let schemaRole = "apppot-emulator-schema"
    /// The system columns kept as fields, with their kind.
    static let intSystemColumns: Set<String> = ["scopeType", "createTime", "updateTime"]
    static let textSystemColumns: Set<String> = ["createUserId", "groupIds"]
    static let dateSystemColumns: Set<String> = ["serverCreateTime", "serverUpdateTime"]

    /// 130 "Record does not exist or data blocking" [doc A7].
    static func recordError(httpStatus: Int? = nil) -> MBaaSError {
        MBaaSError(.conflict, "Record does not exist or data blocking", vendorCode: "130", httpStatus: httpStatus)
    }

    /// 995 "Table empty or does not exist" [inferred].
    static func noTable() -> MBaaSError {
        MBaaSError(.notFound, "Table empty or does not exist", vendorCode: "995")
    }

    // MARK: Schemas

    func schema(_ className: String) async throws -> AppPotClassSchema? {
        guard AppPotIdentifier.isValid(className), !className.hasPrefix("_AppPot") else { return nil }
        let record: Record
        do { record = try await owner.get(className: Self.schemaClass, id: className) } catch let e as MBaaSError where e.kind == .notFound {
            return nil
        }
        guard let text = record.fields["table"]?.stringValue, let json = try? JSON.parse(Data(text.utf8)) else { return nil }
        return try AppPotClassSchema(tableJSON: json)
    }

    /// `POST schemas`: creates each table that does not exist; `isResetDatabase` drops the listed tables' rows and
    /// definitions first [doc A6].
    func defineSchemas(_ caller: Caller) async throws -> TransportResponse {
        let body = try jsonBody()
        let request = try AppPotSchemaRequest(json: body)
        let c = dialect.configuration
        if !request.appId.isEmpty && request.appId != c.appId || !request.companyId.isEmpty && request.companyId != c.companyId {
            return AppPotErrorBody(code: 104).response()
        }
        for (n, table) in (body["tables"]?.arrayValue ?? []).enumerated() {
            guard let name = table["name"]?.stringValue, AppPotIdentifier.isValid(name), !name.hasPrefix("_AppPot") else {
                throw Self.invalid("table \(n) has no valid name ([A-Za-z_][A-Za-z0-9_]*)")
            }
            if request.isResetDatabase {
                try await dropRows(name)
                try? await owner.delete(className: Self.schemaClass, id: name, expectedVersion: nil)
            } else if try await schema(name) != nil {
                continue
            }
            _ = try AppPotClassSchema(tableJSON: table)  // checks the column types
            _ = try await owner.create(Record(className: Self.schemaClass, id: name, acl: ACL([.role(Self.schemaRole): .readWrite]),
                                              fields: ["table": .string(table.printed())]))
        }
        return Self.ok()
    }

    func dropRows(_ className: String) async throws {
        while true {
            let page = try await owner.queryPage(Query(className, limit: 500))
            if page.records.isEmpty { return }
            for r in page.records { if let id = r.id { try await owner.delete(className: className, id: id, expectedVersion: nil) } }
        }
    }

    // MARK: Values

    /// A column value as stored, from the wire: NULL and `""` are absent (`nil`) [doc A7: the server answers both
    /// as ""]; `integer`/`long` columns take numbers or numeric strings, text columns take strings or numbers
    /// (printed as the JS SDK prints them) [sdk: JS formatColumns sends booleans as 1/0 and doubles as strings].
    static func stored(_ json: JSON, type: AppPotColumnType, column: String) throws -> Value? {
        if json.isNull { return nil }
        if case .string(let s) = json, s.isEmpty { return nil }
        switch type {
        case .integer, .long, .dateTime:
            if let i = json.intValue { return .int(i) }
            if let d = json.doubleValue, d.rounded() == d, abs(d) < 9.0e18 { return .int(Int64(d)) }
            if let s = json.stringValue, let i = Int64(s.trimmingCharacters(in: .whitespaces)) { return .int(i) }
            if let b = json.boolValue { return .int(b ? 1 : 0) }
            throw invalid("column \(column) takes an integer")
        case .double:
            if let d = json.doubleValue { return .double(d) }
            if let s = json.stringValue, let d = Double(s) { return .double(d) }
            throw invalid("column \(column) takes a number")
        default:
            let text: String
            switch json {
            case .string(let s): text = s
            case .bool(let b): text = b ? "1" : "0"
            default:
                if let i = json.intValue { text = String(i) } else if let d = json.doubleValue { text = AppPotNumberText.js(d) } else { text = json.printed() }
            }
            if let limit = type.characterLimit, text.count > limit {
                throw invalid("column \(column) holds at most \(limit) characters (got \(text.count))")
            }
            return .string(text)
        }
    }

    /// A value as the wire answers it: always a string, NULL as "" [doc A7].
    static func text(_ value: Value?) -> JSON {
        switch value {
        case nil, .null?: return .string("")
        case .string(let s)?: return .string(s)
        case .int(let i)?: return .string(String(i))
        case .double(let d)?: return .string(AppPotNumberText.js(d))
        case .bool(let b)?: return .string(b ? "1" : "0")
        case .date(let d)?: return .string(AppPotDialect.serverTime(d))
        case let v?: return .string(v.json.printed())
        }
    }

    /// A stored record as an AppPot row: `objectId`, the user columns by name, then the system columns.
    static func row(_ record: Record, schema: AppPotClassSchema) -> JSONObject {
        var o: JSONObject = ["objectId": .string(record.id ?? "")]
        for column in schema.columns.keys.sorted() { o[column] = text(record.fields[column]) }
        for column in ["scopeType", "createUserId", "groupIds", "createTime", "updateTime", "serverCreateTime", "serverUpdateTime"] {
            o[column] = text(record.fields[column])
        }
        o["serverRecordStatus"] = "1"
        return o
    }

    static func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The ACL of a scope: all is every user, user the writer, group the writer's groups (and the writer).
    static func acl(_ scope: AppPotScope, owner: String, groups: [String]) -> ACL {
        switch scope {
        case .all: return .publicReadWrite
        case .user: return .privateTo(owner)
        case .group:
            var acl = scope.acl(createUserId: owner, groupIds: groups)
            acl.entries[.user(owner)] = .readWrite
            return acl
        }
    }

    /// The user columns of a row, as changes (`nil`: set NULL). A column the table does not have is 109.
    static func columns(_ row: JSONObject, schema: AppPotClassSchema) throws -> [String: Value?] {
        var out: [String: Value?] = [:]
        for (key, json) in row {
            if AppPotClassSchema.systemColumns.contains(key) { continue }
            guard let type = schema.columns[key] else { throw invalid("table \(schema.name) has no column '\(key)'") }
            out[key] = try stored(json, type: type, column: key)
        }
        return out
    }

    static func scope(_ json: JSON?) throws -> AppPotScope? {
        guard let json, !json.isNull else { return nil }
        if case .string(let s) = json, s.isEmpty { return nil }
        guard let scope = AppPotScope(wire: json) else { throw invalid("scopeType is 1 (user), 2 (group) or 3 (all)") }
        return scope
    }

    /// A client time column (`createTime`, `updateTime`): an integer as ``stored(_:type:column:)`` reads it, or a
    /// fractional number truncated to its whole part. The JS SDK (v2.3 `formatColumns`) sends `Date.now()/1000`,
    /// float epoch seconds [sdk]; the server's long column keeps the whole part [inferred: a Java server's JSON
    /// binding coerces a float into a long by truncation]. The unit is the client's: seconds from JS, milliseconds
    /// from Android and MBaaSKit.
    static func int(_ json: JSON?, _ column: String) throws -> Value? {
        guard let json else { return nil }
        if json.intValue == nil, let d = json.doubleValue, d.isFinite, abs(d) < 9.0e18 { return .int(Int64(d.rounded(.towardZero))) }
        return try stored(json, type: .long, column: column)
    }

    // MARK: Writes

    /// A write request's table, and the duplicate-submit guard: a `transactionId` seen before is 211 [doc A7].
    func writeTarget(_ objectName: String, transactionId: String?) async throws -> AppPotClassSchema {
        guard let schema = try await schema(objectName) else { throw Self.noTable() }
        if let transactionId, !transactionId.isEmpty {
            // In the store, so that a retry sent to another instance over the same store is refused too.
            let id = SHA256.hash(data: Data(transactionId.utf8)).lowercaseHex
            do {
                _ = try await owner.create(Record(className: Self.transactionClass, id: id, acl: ACL([.role(Self.schemaRole): .readWrite]),
                                                  fields: ["usedAt": .date(dialect.clock())]))
            } catch let e as MBaaSError where e.kind == .duplicate {
                throw MBaaSError(.duplicate, "Transaction Id existed", vendorCode: String(AppPotErrorCode.duplicateTransaction))
            }
        }
        return schema
    }

    /// Runs each row; a one-row request fails as a whole, a longer one reports `objectId` -1 with the row's code
    /// [doc A7: "If object is error, object id is -1"].
    func perRow(_ count: Int, _ body: (Int) async throws -> AppPotWriteResult) async throws -> TransportResponse {
        var results: [AppPotWriteResult] = []
        for n in 0..<count {
            do {
                results.append(try await body(n))
            } catch {
                if count == 1 { throw error }
                let e = AppPotErrorBody(MBaaSError.wrap(error))
                results.append(AppPotWriteResult(objectId: AppPotWriteResult.failedObjectId, errCode: e.code, description: e.description))
            }
        }
        return Self.json(AppPotWriteResult.response(results))
    }

    /// `POST data/batch/addData` [doc A7]: each row gets `objectId` `{Class}_{epoch ms}` (ms + the row's index) unless it brings one
    /// [sdk: offline JS sends `{Class}_{uuid}`], the caller as `createUserId`, its groups as `groupIds`, and
    /// `scopeType` 2 when none is given [sdk: the SDKs' default].
    func addData(_ caller: Caller) async throws -> TransportResponse {
        let request = try AppPotWriteRequest(json: try jsonBody())
        let schema = try await writeTarget(request.objectName, transactionId: request.transactionId)
        let cls = schema.name
        // Two rows bringing one objectId fail the whole request before anything is written [sdk: apppot-sdk-js
        // spec/insert.test.ts expects the insert to be rejected]; the code is the duplicate row's [inferred].
        var given: Set<String> = []
        for row in request.rows {
            guard let id = row["objectId"]?.stringValue, !id.isEmpty else { continue }
            guard given.insert(id).inserted else {
                throw MBaaSError(.duplicate, "objectId \(id) is given twice in one request", vendorCode: "131")
            }
        }
        // One batch is one transaction: its rows share the server time, their ids count up from it [inferred].
        let now = dialect.nextServerTime(reserving: request.rows.count)
        return try await perRow(request.rows.count) { n in
            let row = request.rows[n]
            var id = "\(cls)_\(Self.millis(now) + Int64(n))"
            if let given = row["objectId"]?.stringValue, !given.isEmpty { id = given }
            var fields: [String: Value] = [:]
            for (k, v) in try Self.columns(row, schema: schema) { if let v { fields[k] = v } }
            let scope = try Self.scope(row["scopeType"]) ?? .group
            fields["scopeType"] = .int(Int64(scope.rawValue))
            fields["createTime"] = try Self.int(row["createTime"], "createTime") ?? .int(Self.millis(now))
            fields["updateTime"] = try Self.int(row["updateTime"], "updateTime") ?? .int(Self.millis(now))
            fields["createUserId"] = .string(caller.user.id)
            fields["groupIds"] = .string(AppPotScope.groupIdsWire(caller.groupIds))
            fields["serverCreateTime"] = .date(now)
            fields["serverUpdateTime"] = .date(now)
            let generated = row["objectId"]?.stringValue.map(\.isEmpty) ?? true
            let acl = Self.acl(scope, owner: caller.user.id, groups: caller.groupIds)
            // A generated id is the server time: another instance over the same store may have taken it in the
            // same millisecond, so a taken generated id moves on to this instance's next time (bounded).
            for attempt in 0... {
                do {
                    _ = try await caller.backend.create(Record(className: cls, id: id, acl: acl, fields: fields))
                    break
                } catch let e as MBaaSError where e.kind == .duplicate {
                    guard generated, attempt < 16 else { throw MBaaSError(.duplicate, "objectId \(id) exists", vendorCode: "131") }
                    id = "\(cls)_\(Self.millis(dialect.nextServerTime()))"
                }
            }
            let t = AppPotDialect.serverTime(now)
            return AppPotWriteResult(objectId: id, serverCreateTime: t, serverUpdateTime: t)
        }
    }

    /// The record a write addresses, with the optimistic lock checked: missing, outside the caller's scope or
    /// with another `serverUpdateTime` is 130 [doc A7].
    func lockedRecord(_ caller: Caller, _ cls: String, _ id: String, serverUpdateTime: String?) async throws -> Record {
        let current: Record
        do { current = try await caller.backend.get(className: cls, id: id) } catch let e as MBaaSError where e.kind == .notFound {
            throw Self.recordError()
        }
        if let sent = serverUpdateTime, !sent.isEmpty {
            guard case .date(let d)? = current.fields["serverUpdateTime"], AppPotDialect.serverTime(d) == sent else {
                throw Self.recordError()
            }
        }
        return current
    }

    /// `POST data/batch/updateData` [doc A7]: each row names its `objectId` and carries `serverUpdateTime` as the
    /// lock; the columns it carries are set (null or "" clears one), the others kept.
    func updateData(_ caller: Caller) async throws -> TransportResponse {
        let request = try AppPotWriteRequest(json: try jsonBody())
        let schema = try await writeTarget(request.objectName, transactionId: request.transactionId)
        let cls = schema.name
        return try await perRow(request.rows.count) { n in
            let row = request.rows[n]
            guard let id = AppPotGroupRole.idString(row["objectId"]), !id.isEmpty else { throw Self.invalid("row \(n) has no objectId") }
            let current = try await lockedRecord(caller, cls, id, serverUpdateTime: row["serverUpdateTime"]?.stringValue)
            var changes: [String: FieldOperation] = [:]
            for (k, v) in try Self.columns(row, schema: schema) { changes[k] = v.map(FieldOperation.set) ?? .delete }
            var acl: ACL?
            if let scope = try Self.scope(row["scopeType"]) {
                changes["scopeType"] = .set(.int(Int64(scope.rawValue)))
                let creator = current.fields["createUserId"]?.stringValue ?? caller.user.id
                let groups = AppPotScope.groupIds(fromWire: current.fields["groupIds"].map { Self.text($0) })
                acl = Self.acl(scope, owner: creator, groups: groups)
            }
            for k in ["createTime", "updateTime"] { if let v = try Self.int(row[k], k) { changes[k] = .set(v) } }
            // After the record's own time, so that the lock changes with every write even when another instance
            // wrote it in the same millisecond.
            var now = dialect.nextServerTime()
            if case .date(let previous)? = current.fields["serverUpdateTime"], Self.millis(now) <= Self.millis(previous) {
                now = Date(timeIntervalSince1970: Double(Self.millis(previous) + 1) / 1000)
            }
            changes["serverUpdateTime"] = .set(.date(now))
            do {
                _ = try await caller.backend.update(className: cls, id: id,
                                                    RecordUpdate(changes: changes, expectedVersion: current.version, acl: acl))
            } catch let e as MBaaSError where [.notFound, .conflict, .forbidden].contains(e.kind) {
                throw Self.recordError()
            }
            let created: String? = current.fields["serverCreateTime"].flatMap { if case .date(let d) = $0 { AppPotDialect.serverTime(d) } else { nil } }
            return AppPotWriteResult(objectId: id, serverCreateTime: created, serverUpdateTime: AppPotDialect.serverTime(now))
        }
    }

    /// `POST data/batch/deleteData` [doc A7]: `objectIds` with their `serverUpdateTime` locks; results `{objectId}`.
    func deleteData(_ caller: Caller) async throws -> TransportResponse {
        let request = try AppPotDeleteRequest(json: try jsonBody())
        let schema = try await writeTarget(request.objectName, transactionId: request.transactionId)
        return try await perRow(request.targets.count) { n in
            let target = request.targets[n]
            let current = try await lockedRecord(caller, schema.name, target.objectId, serverUpdateTime: target.serverUpdateTime)
            do {
                try await caller.backend.delete(className: schema.name, id: target.objectId, expectedVersion: current.version)
            } catch let e as MBaaSError where [.notFound, .conflict, .forbidden].contains(e.kind) {
                throw Self.recordError()
            }
            return AppPotWriteResult(objectId: target.objectId)
        }
    }

    // MARK: Reads

    /// `GET data/{Class}/{objectId}`: `{"Class":[row]}` [doc A7]; a missing record, or one outside the caller's
    /// scope, is HTTP 404 errCode 130 [inferred].
    func getRow(_ caller: Caller, _ cls: String, _ id: String) async throws -> TransportResponse {
        guard let schema = try await schema(cls) else { throw Self.noTable() }
        let record: Record
        do { record = try await caller.backend.get(className: cls, id: id) } catch let e as MBaaSError where e.kind == .notFound {
            throw Self.recordError(httpStatus: 404)
        }
        return Self.json(AppPotDataResponse.response(key: cls, rows: [Self.row(record, schema: schema)]))
    }

    /// `POST data/query/{Class}` and `…/count` [doc A8, sdk]: the rows under the query's alias, or `{"count":N}`.
    func query(_ caller: Caller, _ cls: String, count: Bool) async throws -> TransportResponse {
        let json = try jsonBody()
        guard let schema = try await schema(cls) else { throw Self.noTable() }
        if let joins = json["join"], !(joins.arrayValue ?? []).isEmpty {
            throw AppPotQueryTranslator.failure("joins are not emulated")
        }
        let body = try AppPotQueryBody(json: json)
        if body.phyName != cls { throw AppPotQueryTranslator.failure("from.phyName '\(body.phyName)' is not \(cls)") }
        let alias = body.alias
        var predicate: QueryPredicate?
        if let source = body.expression, !source.trimmingCharacters(in: .whitespaces).isEmpty {
            predicate = try storePredicate(AppPotQueryTranslator.predicate(source: source, params: body.params, alias: alias), schema: schema)
        }
        if count {
            let n = try await caller.backend.count(Query(cls, predicate: predicate))
            return Self.json(AppPotDataResponse.countResponse(n))
        }
        var sort = try AppPotQueryTranslator.sort(body.orderBy, alias: alias).map { k -> SortKey in
            SortKey(try storeKey(k.key, schema: schema), ascending: k.ascending)
        }
        if !sort.contains(where: { $0.key == "id" }) { sort.append(SortKey("id")) }
        let limit = body.limit ?? 1000
        guard limit >= 0, (body.offset ?? 1) >= 0 else { throw AppPotQueryTranslator.failure("range.limit and range.offset must not be negative") }
        let skip = AppPotGeneration.v2.skip(rangeOffset: body.offset ?? 1)
        let page = limit == 0 ? RecordPage(records: [])
            : try await caller.backend.queryPage(Query(cls, predicate: predicate, sort: sort, limit: min(limit, 1000), skip: skip))
        if page.records.isEmpty {
            return AppPotErrorBody(code: 993, description: "Table empty or does not exist", httpStatus: 404).response()
        }
        return Self.json(AppPotDataResponse.response(key: alias, rows: page.records.map { Self.row($0, schema: schema) }))
    }

    /// The store's key for a neutral query key: `id`, the system columns, or a column of the table (else 220).
    func storeKey(_ key: String, schema: AppPotClassSchema) throws -> String {
        switch key {
        case "id": return "id"
        case "createdAt": return "serverCreateTime"
        case "updatedAt": return "serverUpdateTime"
        default:
            if Self.intSystemColumns.contains(key) || Self.textSystemColumns.contains(key) || schema.columns[key] != nil { return key }
            throw AppPotQueryTranslator.failure("unknown column '\(key)'")
        }
    }

    /// A query parameter as the store holds the column's values.
    func storeValue(_ value: Value, key: String, schema: AppPotClassSchema) -> Value {
        if key == "id" || Self.textSystemColumns.contains(key) {
            return (try? Self.stored(value.json, type: .varchar(4000), column: key)).flatMap { $0 } ?? value
        }
        if Self.dateSystemColumns.contains(key) {
            if case .string(let s) = value, let d = ISO8601.parse(s) { return .date(d) }
            if let ms = value.intValue { return .date(Date(timeIntervalSince1970: Double(ms) / 1000)) }
            return value
        }
        let type: AppPotColumnType = Self.intSystemColumns.contains(key) ? .long : (schema.columns[key] ?? .varchar(4000))
        let unbounded: AppPotColumnType = if case .varchar = type { .varchar(Int.max) } else { type }
        return (try? Self.stored(value.json, type: unbounded, column: key)).flatMap { $0 } ?? value
    }

    func storePredicate(_ p: QueryPredicate, schema: AppPotClassSchema) throws -> QueryPredicate {
        switch p {
        case .compare(let k, let c, let v):
            let key = try storeKey(k, schema: schema)
            return .compare(key, c, storeValue(v, key: key, schema: schema))
        case .in(let k, let vs):
            let key = try storeKey(k, schema: schema)
            return .in(key, vs.map { storeValue($0, key: key, schema: schema) })
        case .notIn(let k, let vs):
            let key = try storeKey(k, schema: schema)
            return .notIn(key, vs.map { storeValue($0, key: key, schema: schema) })
        case .exists(let k, let b):
            let key = try storeKey(k, schema: schema)
            // `objectId IS NULL` is never true, `IS NOT NULL` always.
            if key == "id" { return .compare("id", b ? .ne : .eq, .string("")) }
            return .exists(key, b)
        case .prefix(let k, let s): return .prefix(try storeKey(k, schema: schema), s)
        case .and(let ps): return .and(try ps.map { try storePredicate($0, schema: schema) })
        case .or(let ps): return .or(try ps.map { try storePredicate($0, schema: schema) })
        case .not(let q): return .not(try storePredicate(q, schema: schema))
        case .regex, .containsAll: throw AppPotQueryTranslator.failure("operator not supported")
        }
    }
}
