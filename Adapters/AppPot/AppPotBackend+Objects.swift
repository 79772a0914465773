import Foundation
public import MBaaSCore

/// Records: `data/batch/addData`, `updateData`, `deleteData` and `GET data/{Class}/{id}` (reference A7).
///
/// - A record's ACL becomes its `scopeType` (see ``AppPotScope/from(acl:userId:groupIds:)``); records read back
///   carry the ACL their scope means.
/// - Updates read the row first and send it whole with the changes applied (AppPot's update rows carry every
///   column; whether missing columns are kept is not documented), so the result is the whole record. Only
///   `set` and `delete` (null) changes exist; the other field operations are `unsupported`.
/// - With `transactions=true` in the URL every write carries a fresh `transactionId` (duplicate-submit guard) and
///   sets it as the request's idempotency key, so a ``MBaaSCore/RetryingTransport`` may resend it: if the first
///   attempt did land, the server answers errCode 211, thrown as ``MBaaSError/Kind/duplicate``.
/// - ``batch(_:)`` sends each run of consecutive operations of one kind on one class as one batch request. It is
///   not atomic: each row has its own result (`-1` for a failed row). An error the server reports for a whole
///   request fails every operation of that request.
extension AppPotBackend {
    /// The ACL a record written now reads back with (``MBaaSCore/ObjectStore/narrowedACL(_:)``): for an ACL a scope
    /// expresses for the logged-in user (see ``AppPotScope/from(acl:userId:groupIds:default:)``; with `clientGroupIds`,
    /// also a subset of the user's groups), the ACL that scope means (`{"*":rw, me:rw}` is scope all, `{"*":rw}`);
    /// else the user's own (user scope), the narrowest an AppPot record has, since it always belongs to the user who
    /// wrote it. Sends nothing but the log-in the URL may name; an ACL that needs narrowing is `unsupported` without
    /// a session.
    public func narrowedACL(_ acl: ACL) async throws -> ACL {
        let (userId, groupIds) = try await identity()
        if configuration.clientGroupIds, let subset = AppPotScope.groupSubset(acl: acl, userId: userId, groupIds: groupIds) {
            return AppPotScope.group.acl(createUserId: userId, groupIds: subset)
        }
        do throws(MBaaSError) {
            let scope = try AppPotScope.from(acl: acl, userId: userId, groupIds: groupIds, default: configuration.defaultScope)
            return scope.acl(createUserId: userId, groupIds: groupIds)
        } catch {
            guard let userId else { throw error }
            return .privateTo(userId)
        }
    }

    public func create(_ record: Record) async throws -> Record {
        let results = await createRun(record.className, [record])
        switch results[0] {
        case .success(let r): return r
        case .failure(let e): throw e
        }
    }

    public func get(className: String, id: String) async throws -> Record {
        guard let row = try await fetchRow(className: className, id: id) else {
            throw MBaaSError(.notFound, "no \(className) record with id \(id)")
        }
        return try AppPotRowCodec.decodeRecord(row, className: className, schema: readSchema(className, rows: [row]))
    }

    public func update(className: String, id: String, _ update: RecordUpdate) async throws -> Record {
        switch await updateRun(className, [(id, update)])[0] {
        case .success(let r): return r
        case .failure(let e): throw e
        }
    }

    public func delete(className: String, id: String, expectedVersion: String?) async throws {
        if case .failure(let e) = await deleteRun(className, [(id, expectedVersion)])[0] { throw e }
    }

    public func batch(_ operations: [BatchOperation]) async throws -> [BatchResult] {
        guard operations.count <= capabilities.maxBatchSize else {
            throw MBaaSError(.invalidRequest, "a batch holds at most \(capabilities.maxBatchSize) operations, got \(operations.count)")
        }
        var results: [BatchResult] = []
        var index = 0
        while index < operations.count {
            var end = index + 1
            while end < operations.count, AppPotBackend.sameRun(operations[index], operations[end]) { end += 1 }
            let run = Array(operations[index..<end])
            switch run[0] {
            case .create(let first):
                results += await createRun(first.className, run.compactMap { if case .create(let r) = $0 { r } else { nil } })
            case .update(let className, _, _):
                results += await updateRun(className, run.compactMap { if case .update(_, let id, let u) = $0 { (id, u) } else { nil } })
            case .delete(let className, _):
                results += await deleteRun(className, run.compactMap { if case .delete(_, let id) = $0 { (id, nil) } else { nil } })
            }
            index = end
        }
        return results
    }

    static func sameRun(_ a: BatchOperation, _ b: BatchOperation) -> Bool {
        switch (a, b) {
        case (.create(let x), .create(let y)): x.className == y.className
        case (.update(let x, _, _), .update(let y, _, _)): x == y
        case (.delete(let x, _), .delete(let y, _)): x == y
        default: false
        }
    }

    // MARK: Runs (one request each)

    /// Creates records of one class with one `addData`.
    /// A null cannot be told apart from an unset column on AppPot: writing one is refused, not approximated
    /// (``FieldOperation/delete`` clears a column).
    func nullUnsupported(_ key: String) -> MBaaSError {
        MBaaSError.unsupported("null values ('\(key)')", by: adapterName, reason: capabilities.note(for: .valueType("null")))
    }

    func createRun(_ className: String, _ records: [Record]) async -> [BatchResult] {
        var results = [BatchResult?](repeating: nil, count: records.count)
        do {
            try AppPotIdentifier.check(className, what: "class name")
            let (userId, groupIds) = try await identity()
            if userId == nil { _ = try await token(for: .user) }  // without a session: log in first (or anonymousData)
            var merged: [String: Value] = [:]
            for r in records {
                for (k, v) in r.fields where merged[k] == nil || merged[k]!.isNull { merged[k] = v }
            }
            for key in merged.keys { try AppPotRowCodec.checkFieldName(key) }
            // Refuse what cannot be written before anything reaches the server (no table for a refused write).
            if records.count == 1, let key = records[0].fields.first(where: { $0.value.isNull })?.key { throw nullUnsupported(key) }
            let (schema, derived) = try await ensureSchema(className, fields: merged)
            let now = context.now
            var rows: [(Int, JSONObject, AppPotScope)] = []
            for (i, r) in records.enumerated() {
                do {
                    let subset = configuration.clientGroupIds
                        ? AppPotScope.groupSubset(acl: r.acl, userId: userId, groupIds: groupIds) : nil
                    let scope = try subset.map { _ in AppPotScope.group }
                        ?? AppPotScope.from(acl: r.acl, userId: userId, groupIds: groupIds, default: configuration.defaultScope)
                    if let id = r.id { try AppPotBackend.checkObjectId(id) }
                    if let key = r.fields.first(where: { $0.value.isNull })?.key { throw nullUnsupported(key) }
                    try checkColumns(r.fields, of: schema)
                    let fields = r.fields.filter { !$0.value.isNull }
                    let row = try AppPotRowCodec.encodeRow(fields: fields, schema: schema, scope: scope, objectId: r.id,
                                                           createTime: now, updateTime: now, serverUpdateTime: nil,
                                                           generation: generation)
                    var placed = row
                    if let subset { placed["groupIds"] = .string(AppPotScope.clientGroupIdsWire(subset)) }
                    rows.append((i, placed, scope))
                } catch {
                    results[i] = .failure(MBaaSError.wrap(error))
                }
            }
            if !rows.isEmpty {
                let tx = nextTransactionId()
                let body = AppPotWriteRequest(objectName: className, transactionId: tx, rows: rows.map(\.1))
                let json: JSON?
                do {
                    (_, json) = try await call(.post, AppPotRoute.addData.segments, body: .json(body.json),
                                               token: .user, idempotencyKey: tx)
                } catch {
                    if derived { forgetDerived(schema) }
                    throw error
                }
                let written = try AppPotWriteResult.decodeResponse(json)
                if written.contains(where: { !$0.isFailure }) { confirmSchema(className) }
                guard written.count == rows.count else {
                    throw MBaaSError(.decoding, "AppPot addData answered \(written.count) results for \(rows.count) rows")
                }
                for ((i, row, _), result) in zip(rows, written) {
                    if result.isFailure {
                        results[i] = .failure(result.error(row: i, className: className))
                        continue
                    }
                    var stored = AppPotRowCodec.stringly(row)
                    stored["objectId"] = .string(result.objectId)
                    if let c = result.serverCreateTime { stored["serverCreateTime"] = .string(c) }
                    if let u = result.serverUpdateTime { stored["serverUpdateTime"] = .string(u) }
                    if let userId { stored["createUserId"] = .string(userId) }
                    if row["groupIds"] == nil { stored["groupIds"] = .string(AppPotScope.groupIdsWire(groupIds)) }
                    results[i] = .success(try AppPotRowCodec.decodeRecord(stored, className: className, schema: schema))
                }
            }
        } catch {
            let e = MBaaSError.wrap(error)
            for i in results.indices where results[i] == nil { results[i] = .failure(e) }
        }
        return results.map { $0! }
    }

    /// Updates records of one class with one `updateData` (each row read first).
    func updateRun(_ className: String, _ updates: [(id: String, update: RecordUpdate)], retried: Bool = false) async -> [BatchResult] {
        var results = [BatchResult?](repeating: nil, count: updates.count)
        do {
            try AppPotIdentifier.check(className, what: "class name")
            let (userId, groupIds) = try await identity()
            let schema = schema(for: className)
            let now = context.now
            var rows: [(Int, JSONObject, JSONObject)] = []
            for (i, (id, update)) in updates.enumerated() {
                do {
                    var sets: [String: Value] = [:]
                    for (key, op) in update.changes {
                        try AppPotRowCodec.checkFieldName(key)
                        switch op {
                        case .set(let v):
                            if v.isNull { throw nullUnsupported(key) }
                            sets[key] = v
                        case .delete: sets[key] = .null
                        case .increment, .add, .addUnique, .remove:
                            throw MBaaSError.unsupported("the field operation on '\(key)'", by: adapterName,
                                                         reason: capabilities.note(for: .fieldOperations))
                        }
                    }
                    if let schema { try checkColumns(sets, of: schema) }
                    guard let current = try await fetchRow(className: className, id: id) else {
                        throw MBaaSError(.notFound, "no \(className) record with id \(id)")
                    }
                    _ = try readSchema(className, rows: [current])
                    let subset = configuration.clientGroupIds
                        ? AppPotScope.groupSubset(acl: update.acl, userId: userId, groupIds: groupIds) : nil
                    let scope = try subset.map { _ in AppPotScope.group } ?? update.acl.map { acl throws(MBaaSError) in
                        try AppPotScope.from(acl: acl, userId: userId, groupIds: groupIds, default: configuration.defaultScope)
                    } ?? AppPotScope(wire: current["scopeType"]) ?? configuration.defaultScope
                    var row = JSONObject()
                    row["objectId"] = .string(id)
                    for (key, wire) in current where !AppPotRowCodec.metadataColumns.contains(key) && sets[key] == nil {
                        // Unchanged columns: sent back in the column's own type when the schema is known.
                        if let type = schema?.columns[key],
                           let v = try AppPotValueCodec.value(fromWire: wire, column: type, field: key) {
                            row[key] = try AppPotValueCodec.wire(v, column: type, field: key, generation: generation)
                        } else if case .string(let text) = wire, text.isEmpty {
                            // The server's NULL (answered as ""): sent back as NULL, never as "" into a number column.
                            row[key] = .null
                        } else if schema?.columns[key] != nil {
                            row[key] = .null
                        } else {
                            row[key] = wire
                        }
                    }
                    for key in sets.keys.sorted() {
                        row[key] = try AppPotValueCodec.wire(sets[key]!, column: schema?.columns[key], field: key,
                                                             generation: generation)
                    }
                    row["scopeType"] = .int(Int64(scope.rawValue))
                    if let c = current["createTime"], !c.isNull { row["createTime"] = AppPotValueCodec.integer(c).map(JSON.int) ?? c }
                    row["updateTime"] = .int(ISO8601.millis(now))
                    if let v = update.expectedVersion ?? current["serverUpdateTime"]?.stringValue {
                        row["serverUpdateTime"] = .string(v)
                    }
                    var meta = JSONObject()
                    for key in ["serverCreateTime", "createUserId", "groupIds"] { if let v = current[key] { meta[key] = v } }
                    if let subset {
                        row["groupIds"] = .string(AppPotScope.clientGroupIdsWire(subset))
                        meta["groupIds"] = .string(AppPotScope.groupIdsWire(subset))
                    }
                    rows.append((i, row, meta))
                } catch {
                    results[i] = .failure(MBaaSError.wrap(error))
                }
            }
            if !rows.isEmpty {
                let tx = nextTransactionId()
                let body = AppPotWriteRequest(objectName: className, transactionId: tx, rows: rows.map(\.1))
                let json: JSON?
                do {
                    (_, json) = try await call(.post, AppPotRoute.updateData.segments, body: .json(body.json),
                                               token: .user, idempotencyKey: tx)
                } catch let error as MBaaSError where error.vendorCode == String(AppPotErrorCode.recordConflict) {
                    // 130: a stale version, or a record that is gone. Tell them apart by reading again.
                    let ids = rows.map { updates[$0.0].id }
                    let noVersion = rows.allSatisfy { updates[$0.0].update.expectedVersion == nil }
                    if noVersion, !retried {
                        // The caller asked for no check: the row changed between our read and write; try once more.
                        let again = await updateRun(className, rows.map { updates[$0.0] }, retried: true)
                        for ((i, _, _), r) in zip(rows, again) { results[i] = r }
                        return results.map { $0! }
                    }
                    let refined = await refineConflict(error, className: className, ids: ids)
                    for ((i, _, _), e) in zip(rows, refined) { results[i] = .failure(e) }
                    return results.map { $0! }
                }
                let written = try AppPotWriteResult.decodeResponse(json)
                guard written.count == rows.count else {
                    throw MBaaSError(.decoding, "AppPot updateData answered \(written.count) results for \(rows.count) rows")
                }
                for ((i, row, meta), result) in zip(rows, written) {
                    if result.isFailure {
                        results[i] = .failure(result.error(row: i, className: className))
                        continue
                    }
                    var stored = AppPotRowCodec.stringly(row)
                    for (k, v) in meta { stored[k] = v }
                    if let c = result.serverCreateTime { stored["serverCreateTime"] = .string(c) }
                    if let u = result.serverUpdateTime { stored["serverUpdateTime"] = .string(u) }
                    results[i] = .success(try AppPotRowCodec.decodeRecord(stored, className: className, schema: schema))
                }
            }
        } catch {
            let e = MBaaSError.wrap(error)
            for i in results.indices where results[i] == nil { results[i] = .failure(e) }
        }
        return results.map { $0! }
    }

    /// Deletes records of one class with one `deleteData`.
    func deleteRun(_ className: String, _ targets: [(id: String, expectedVersion: String?)], retried: Bool = false) async -> [BatchResult] {
        var results = [BatchResult?](repeating: nil, count: targets.count)
        do {
            try AppPotIdentifier.check(className, what: "class name")
            var entries: [(Int, AppPotDeleteRequest.Target)] = []
            for (i, t) in targets.enumerated() {
                do {
                    var version = t.expectedVersion
                    if version == nil {
                        guard let row = try await fetchRow(className: className, id: t.id) else {
                            throw MBaaSError(.notFound, "no \(className) record with id \(t.id)")
                        }
                        version = row["serverUpdateTime"]?.stringValue
                    }
                    entries.append((i, .init(objectId: t.id, serverUpdateTime: version)))
                } catch {
                    results[i] = .failure(MBaaSError.wrap(error))
                }
            }
            if !entries.isEmpty {
                let tx = nextTransactionId()
                let body = AppPotDeleteRequest(objectName: className, transactionId: tx, targets: entries.map(\.1))
                let json: JSON?
                do {
                    (_, json) = try await call(.post, AppPotRoute.deleteData.segments, body: .json(body.json),
                                               token: .user, idempotencyKey: tx)
                } catch let error as MBaaSError where error.vendorCode == String(AppPotErrorCode.recordConflict) {
                    let noVersion = entries.allSatisfy { targets[$0.0].expectedVersion == nil }
                    if noVersion, !retried {
                        let again = await deleteRun(className, entries.map { targets[$0.0] }, retried: true)
                        for ((i, _), r) in zip(entries, again) { results[i] = r }
                        return results.map { $0! }
                    }
                    let refined = await refineConflict(error, className: className, ids: entries.map(\.1.objectId))
                    for ((i, _), e) in zip(entries, refined) { results[i] = .failure(e) }
                    return results.map { $0! }
                }
                let written = (try? AppPotWriteResult.decodeResponse(json)) ?? []
                for (n, (i, target)) in entries.enumerated() {
                    if n < written.count, written[n].isFailure {
                        results[i] = .failure(written[n].error(row: i, className: className))
                    } else {
                        results[i] = .success(Record(className: className, id: target.objectId))
                    }
                }
            }
        } catch {
            let e = MBaaSError.wrap(error)
            for i in results.indices where results[i] == nil { results[i] = .failure(e) }
        }
        return results.map { $0! }
    }

    /// A client-chosen object id: non-empty, at most 255 characters (the `objectId` column), no `/`. The JS SDK's
    /// offline ids are `{Class}_{uuid}`.
    static func checkObjectId(_ id: String) throws {
        guard !id.isEmpty, id.count <= AppPotColumnType.defaultStringLength, !id.contains("/"),
              !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
              id != AppPotWriteResult.failedObjectId else {
            throw MBaaSError(.invalidRequest, "AppPot object id '\(id)' is not valid: 1 to 255 characters, no '/' or control characters, not -1")
                .refusing(MBaaSError.recordIdKey)
        }
    }

    /// errCode 130 means "does not exist or data blocking": a record that is gone is `notFound`, one that is
    /// still there is a `conflict`.
    func refineConflict(_ error: MBaaSError, className: String, ids: [String]) async -> [MBaaSError] {
        var out: [MBaaSError] = []
        for id in ids {
            var e = error
            var gone = false
            do { gone = try await fetchRow(className: className, id: id) == nil } catch {}
            if gone {
                e.kind = .notFound
                e.message = "no \(className) record with id \(id) (\(error.message))"
            } else {
                e.message = "the \(className) record \(id) changed since it was read (\(error.message))"
            }
            out.append(e)
        }
        return out
    }

    /// `GET data/{Class}/{id}`: the raw row, or `nil` when the record does not exist (HTTP 404, an empty answer,
    /// or errCode 130, 993 or 995).
    func fetchRow(className: String, id: String) async throws -> JSONObject? {
        try AppPotIdentifier.check(className, what: "class name")
        guard !id.isEmpty else { throw MBaaSError(.invalidRequest, "record id is empty") }
        let (response, token) = try await send(.get, AppPotRoute.object(className: className, id: id).segments, token: .user)
        let json: JSON?
        do {
            json = try check(response, token: token)
        } catch let error as MBaaSError {
            if response.status == 404 { return nil }
            if let code = error.numericVendorCode, [130, 993, 995].contains(code) { return nil }
            throw error
        }
        guard let rows = try AppPotDataResponse.rows(json, keys: [className]), let row = rows.first else { return nil }
        return row
    }
}
