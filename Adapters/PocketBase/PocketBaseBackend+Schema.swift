import Foundation
import MBaaSCore

/// Schema management: collections and columns are created on demand with superuser credentials; other clients
/// learn what they can from sample records.
extension PocketBaseBackend {
    // MARK: Definitions (superuser)

    /// The definition of a collection, cached; `nil` when it does not exist.
    func definition(_ name: String, refresh: Bool = false) async throws -> PocketBaseCollection? {
        if !refresh, let cached = definitions[name.lowercased()] { return cached }
        do {
            let json = try await sendJSON(.get, "/api/collections/\(percentEncode(name))", as: .superuser)
            let collection = try PocketBaseCollection(json: json)
            remember(collection)
            return collection
        } catch let e as MBaaSError where e.kind == .notFound {
            definitions[name.lowercased()] = nil
            return nil
        }
    }

    func remember(_ collection: PocketBaseCollection) {
        definitions[collection.name.lowercased()] = collection
        collectionNames[collection.id] = collection.name
        definitionSchemas.removeAll()
    }

    func forget(_ name: String) {
        definitions[name.lowercased()] = nil
        sampledSchemas[name.lowercased()] = nil
        definitionSchemas.removeAll()
    }

    func usersCollectionId() async throws -> String {
        guard let users = try await definition(configuration.usersCollection) else {
            throw MBaaSError(.notFound, "PocketBase has no auth collection '\(configuration.usersCollection)' (ACL user ids refer to it)")
        }
        return users.id
    }

    /// The schema of a collection definition: built once and kept until a definition or a collection name
    /// changes (``remember(_:)``, ``forget(_:)``). Every caller passes a definition it got from
    /// ``definition(_:refresh:)`` or has just remembered, so the id identifies it.
    func schema(of collection: PocketBaseCollection) -> PocketBaseSchema {
        if let cached = definitionSchemas[collection.id] { return cached }
        let schema = PocketBaseSchema(collection: collection, collectionNames: collectionNames)
        definitionSchemas[collection.id] = schema
        return schema
    }

    // MARK: Serializing schema changes

    func lockSchema() async {
        if schemaLocked {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in schemaWaiters.append(c) }
        } else {
            schemaLocked = true
        }
    }

    func unlockSchema() {
        if schemaWaiters.isEmpty { schemaLocked = false } else { schemaWaiters.removeFirst().resume() }
    }

    /// Runs a schema change under the lock; when the server refuses it (another client changed the same
    /// collection meanwhile), reloads the definition and tries once more.
    func changingSchema<T>(_ change: (_ refresh: Bool) async throws -> T) async throws -> T {
        await lockSchema()
        defer { unlockSchema() }
        do {
            return try await change(false)
        } catch let e as MBaaSError where (e.kind == .invalidRequest || e.kind == .duplicate) && e.httpStatus != nil {
            logger.debug("PocketBase schema change refused, retrying with a fresh definition", metadata: ["error": "\(e.message)"])
            return try await change(true)
        }
    }

    // MARK: Schemas for reading and querying

    /// What is known of a collection for decoding records: its definition (superuser, fetched once) or a
    /// schema learned from a sample.
    func schemaForReading(_ className: String) async throws -> PocketBaseSchema? {
        if configuration.managesSchema {
            return try await definition(className).map(schema(of:))
        }
        return sampledSchemas[className.lowercased()]
    }

    enum QuerySchema {
        /// The collection does not exist, or this client sees no record of it: every query is empty.
        case empty
        case known(PocketBaseSchema)
    }

    /// The schema a query is translated against. Without superuser rights, the visible columns of one record.
    func schemaForQuery(_ className: String) async throws -> QuerySchema {
        try PocketBaseBackend.checkClassName(className)
        if configuration.managesSchema {
            guard let def = try await definition(className) else { return .empty }
            return .known(schema(of: def))
        }
        if let cached = sampledSchemas[className.lowercased()] { return .known(cached) }
        let list: PocketBaseList
        do {
            list = try PocketBaseList(json: try await sendJSON(
                .get, PocketBaseWire.recordsPath(className), query: [("perPage", "1"), ("skipTotal", "1")], as: .data))
        } catch let e as MBaaSError where e.kind == .notFound {
            return .empty
        }
        guard let sample = list.items.first else { return .empty }
        let learned = PocketBaseSchema(name: className, sample: sample)
        sampledSchemas[className.lowercased()] = learned
        return .known(learned)
    }

    static func checkClassName(_ className: String) throws(MBaaSError) {
        guard PocketBaseWire.isValidCollectionName(className) else {
            throw MBaaSError(.invalidRequest, "class name '\(className)' is not a PocketBase collection name (ASCII letters, digits and _, not starting with _)")
        }
    }

    // MARK: Preparing writes

    /// Makes sure the collection has a column (and type column) for every field about to be written, creating
    /// the collection when needed. Returns the schema to encode with (`nil` when unknown: not a superuser and no
    /// sample). `acl` is the ACL about to be written, if any: a collection not created by MBaaSKit has no ACL
    /// columns, so a non-nil ACL there is `unsupported`.
    func prepareWrite(className: String, changes: [String: PocketBaseRecordCodec.Change], acl: ACL?) async throws -> PocketBaseSchema? {
        try PocketBaseBackend.checkClassName(className)
        guard configuration.managesSchema else {
            if let known = sampledSchemas[className.lowercased()] {
                if acl != nil, !known.isManaged { throw Self.unmanagedACL(className) }
                return known
            }
            return nil
        }
        return try await changingSchema { refresh in
            try await self.applyWrite(className: className, changes: changes, acl: acl, refresh: refresh)
        }
    }

    private func applyWrite(
        className: String, changes: [String: PocketBaseRecordCodec.Change], acl: ACL?, refresh: Bool
    ) async throws -> PocketBaseSchema? {
        let existing = try await definition(className, refresh: refresh)
        var added: [PocketBaseField] = []
        func has(_ name: String) -> Bool {
            existing?.field(named: name) != nil || added.contains { $0.name.equalsIgnoringCase(name) }
        }
        for name in changes.keys.sorted() {
            try PocketBaseWire.validateFieldName(name, authCollection: existing?.isAuth ?? false)
            let column = existing?.field(named: name)
            if let column, column.name != name {
                throw MBaaSError(.invalidRequest, "field '\(name)' clashes with the existing field '\(column.name)' (PocketBase field names are case-insensitive)")
            }
            guard case .set(let value) = changes[name]! else { continue }
            let stored = try PocketBaseRecordCodec.store(value, field: name, existing: column?.kind)
            if column == nil {
                if let kind = stored.kind { added.append(.field(name, kind: kind)) }
                let tag = PocketBaseWire.tagColumn(for: name)
                if !has(tag) { added.append(.text(tag)) }
            }
        }
        if let existing {
            if acl != nil, !existing.isManaged { throw Self.unmanagedACL(className) }
            // A collection an earlier version of the adapter created lacks the id index: the next write adds it.
            let indexing = existing.isManaged && !existing.hasCaseInsensitiveIdIndex
            guard !added.isEmpty || indexing else { return schema(of: existing) }
            // A PATCH replaces the whole field list: it is built on a definition read just now, never on a cached
            // one another client (or another instance in this process) may have changed since.
            if !refresh { return try await applyWrite(className: className, changes: changes, acl: acl, refresh: true) }
            var updated = existing
            updated.fields = existing.fields + added
            var patch: JSONObject = ["fields": updated.raw["fields"]!]
            if indexing {
                patch["indexes"] = .array((existing.indexes + [PocketBaseCollection.idCaseInsensitiveIndex(collection: existing.name)]).map(JSON.string))
            }
            logger.info("changing PocketBase collection", metadata: [
                "collection": "\(className)", "fields": "\(added.map(\.name))", "idIndex": "\(indexing)",
            ])
            let json = try await sendJSON(
                .patch, "/api/collections/\(percentEncode(existing.id))", json: .object(patch), as: .superuser)
            let collection = try PocketBaseCollection(json: json)
            remember(collection)
            return schema(of: collection)
        }
        let created = PocketBaseCollection.managed(name: className, usersCollectionId: try await usersCollectionId(), fields: added)
        logger.info("creating PocketBase collection", metadata: ["collection": "\(className)"])
        let json = try await sendJSON(.post, "/api/collections", json: created.json, as: .superuser)
        let collection = try PocketBaseCollection(json: json)
        remember(collection)
        return schema(of: collection)
    }

    static func unmanagedACL(_ className: String) -> MBaaSError {
        MBaaSError.unsupported(
            "ACLs on the collection '\(className)'", by: "pocketbase",
            reason: "it was not created by MBaaSKit, so it has no ACL columns; its access is governed by its own API rules")
    }

    /// Makes sure a record's field can take an attached file: a (protected, single) file column.
    func prepareFileField(className: String, field: String) async throws -> PocketBaseSchema? {
        try PocketBaseBackend.checkClassName(className)
        try PocketBaseWire.validateFieldName(field)
        guard configuration.managesSchema else { return sampledSchemas[className.lowercased()] }
        return try await changingSchema { refresh in
            try await self.applyFileField(className: className, field: field, refresh: refresh)
        }
    }

    private func applyFileField(className: String, field: String, refresh: Bool) async throws -> PocketBaseSchema? {
        guard let existing = try await definition(className, refresh: refresh) else {
            throw MBaaSError(.notFound, "PocketBase has no collection '\(className)' to attach a file to")
        }
        var added: [PocketBaseField] = []
        if let column = existing.field(named: field) {
            guard column.kind == .file else {
                throw MBaaSError(.invalidRequest, "field '\(field)' of '\(className)' is a PocketBase \(column.type) field, not a file field")
            }
        } else {
            added.append(.file(field))
            if existing.field(named: PocketBaseWire.tagColumn(for: field)) == nil { added.append(.text(PocketBaseWire.tagColumn(for: field))) }
        }
        guard !added.isEmpty else { return schema(of: existing) }
        // Built on a definition read just now (a PATCH replaces the whole field list).
        if !refresh { return try await applyFileField(className: className, field: field, refresh: true) }
        var updated = existing
        updated.fields = existing.fields + added
        let json = try await sendJSON(
            .patch, "/api/collections/\(percentEncode(existing.id))", json: .object(["fields": updated.raw["fields"]!]),
            as: .superuser)
        let collection = try PocketBaseCollection(json: json)
        remember(collection)
        return schema(of: collection)
    }

    // MARK: Users, files, batch

    /// Gives the users collection what sign-up and log-in by user name need: a `username` text field with a
    /// unique index, `username` among the password identity fields, and an optional e-mail. Superuser only;
    /// other clients use the collection as it is.
    func prepareUsersCollection() async throws {
        guard !usersReady else { return }
        guard configuration.managesSchema else { usersReady = true; return }
        try await changingSchema { refresh in try await self.applyUsersCollection(refresh: refresh) }
        usersReady = true
    }

    private func applyUsersCollection(refresh: Bool) async throws {
        let name = configuration.usersCollection
        guard var users = try await definition(name, refresh: refresh) else {
            throw MBaaSError(.notFound, "PocketBase has no auth collection '\(name)'")
        }
        guard users.isAuth else { throw MBaaSError(.invalidRequest, "PocketBase collection '\(name)' is not an auth collection") }
        var changed = false
        var fields = users.fields
        if !fields.contains(where: { $0.name == "username" }) {
            fields.append(.text("username", max: 150))
            changed = true
        }
        if let i = fields.firstIndex(where: { $0.name == "email" }), fields[i].raw["required"]?.boolValue == true {
            fields[i].raw["required"] = false
            changed = true
        }
        var indexes = users.indexes
        if !indexes.contains(where: { $0.contains("UNIQUE") && $0.contains("username") }) {
            indexes.append("CREATE UNIQUE INDEX `idx_username_\(name)` ON `\(name)` (`username`) WHERE `username` != ''")
            changed = true
        }
        var passwordAuth = users.raw["passwordAuth"]?.objectValue ?? ["enabled": true]
        var identities = passwordAuth["identityFields"]?.arrayValue?.compactMap(\.stringValue) ?? ["email"]
        if !identities.contains("username") || passwordAuth["enabled"]?.boolValue != true {
            if !identities.contains("username") { identities.append("username") }
            passwordAuth["identityFields"] = .array(identities.map(JSON.string))
            passwordAuth["enabled"] = true
            changed = true
        }
        if changed {
            // Built on a definition read just now: a cached one may predate fields other clients added since, and
            // this PATCH would drop them (or make the e-mail required again).
            if !refresh { return try await applyUsersCollection(refresh: true) }
            users.fields = fields
            logger.info("preparing PocketBase users collection for user names", metadata: ["collection": "\(name)"])
            let json = try await sendJSON(
                .patch, "/api/collections/\(percentEncode(users.id))",
                json: .object(["fields": users.raw["fields"]!, "indexes": .array(indexes.map(JSON.string)),
                               "passwordAuth": .object(passwordAuth)]),
                as: .superuser)
            remember(try PocketBaseCollection(json: json))
        }
    }

    /// The collection of standalone uploads: one protected file per record, its original name, content type and
    /// size, and the ACL columns. Created on first use (superuser).
    func prepareFilesCollection() async throws -> Bool {
        let name = configuration.filesCollection
        guard configuration.managesSchema else { return true }
        return try await changingSchema { refresh in try await self.applyFilesCollection(name: name, refresh: refresh) }
    }

    private func applyFilesCollection(name: String, refresh: Bool) async throws -> Bool {
        if try await definition(name, refresh: refresh) != nil { return true }
        let collection = PocketBaseCollection.managed(
            name: name, usersCollectionId: try await usersCollectionId(),
            fields: [.file("file"), .text("name", max: 1000), .text("contentType", max: 255), .number("size")])
        logger.info("creating PocketBase files collection", metadata: ["collection": "\(name)"])
        remember(try PocketBaseCollection(json: try await sendJSON(.post, "/api/collections", json: collection.json, as: .superuser)))
        return true
    }

    /// Turns on batch requests in the server settings (they are off by default). Superuser only.
    func enableBatch() async throws {
        let settings = try await sendJSON(.get, "/api/settings", as: .superuser)
        var batch = settings["batch"]?.objectValue ?? [:]
        batch["enabled"] = true
        if (batch["maxRequests"]?.intValue ?? 0) < Int64(capabilities.maxBatchSize) {
            batch["maxRequests"] = .int(Int64(capabilities.maxBatchSize))
        }
        logger.info("enabling PocketBase batch requests")
        _ = try await send(.patch, "/api/settings", json: .object(["batch": .object(batch)]), as: .superuser)
    }
}
