import Foundation
import MBaaSCore
import MBaaSKiiWire

/// Buckets, objects and queries (kii.md §3, §4, §6.2).
///
/// An object is a store record of the bucket's class (``KiiStoreBucket``) whose fields are the application's
/// fields plus hidden `_owner` (the creator) and `_dataType` (bodies are files of their own, see `putBody`); its version is the store's. Buckets that have
/// held an object are listed in the bookkeeping class `KiiBucket`.
extension KiiCall {
    static let bucketClass = "KiiBucket"

    // MARK: Scopes

    /// The bucket with its scope owner resolved; a missing group is 404 `GROUP_NOT_FOUND`, things are not emulated.
    func resolve(_ address: KiiBucketAddress) async throws -> KiiStoreBucket {
        switch address.scope {
        case .app: return KiiStoreBucket(scope: .app, bucket: address.bucket)
        case .user(let selector): return KiiStoreBucket(scope: .user(try await userID(selector)), bucket: address.bucket)
        case .group(let id):
            guard (try? await owner.get(className: Self.groupClass, id: id)) != nil else {
                throw KiiFailure("GROUP_NOT_FOUND", "The group \(id) was not found")
            }
            return KiiStoreBucket(scope: .group(id), bucket: address.bucket)
        case .thing(let id):
            throw KiiFailure("THING_NOT_FOUND", "Things are not emulated (\(id))", status: 404)
        }
    }

    /// The scope owner: the admin, the user of a user scope, a member of a group ([doc] kii.md §6.2).
    func ownsScope(_ b: KiiStoreBucket) async -> Bool {
        if caller == .admin { return true }
        switch b.scope {
        case .app: return false
        case .user(let id): return caller.userID == id
        case .group(let id): return await isMember(of: id)
        case .thing: return false
        }
    }

    /// [doc] kii.md §6.2: app-scope buckets take objects from any authenticated user; others from their owners.
    func checkCanCreate(_ b: KiiStoreBucket) async throws {
        if case .app = b.scope, caller != .anonymous { return }
        if await ownsScope(b) { return }
        throw unauthorized("the caller may not create objects in bucket \(b.bucket)")
    }

    /// [doc] kii.md §6.2: every caller queries app-scope buckets; only the owner others.
    func checkCanQuery(_ b: KiiStoreBucket) async throws {
        if case .app = b.scope { return }
        if await ownsScope(b) { return }
        throw unauthorized("the caller may not query bucket \(b.bucket)")
    }

    /// The view objects are read through: in app scope every caller reads every object (READ_OBJECTS_IN_BUCKET,
    /// [doc]); elsewhere the object's ACL decides.
    func readView(_ b: KiiStoreBucket) -> any ServerStore {
        if case .app = b.scope { return owner }
        return view
    }

    /// The store ACL of a new object ([doc] kii.md §6.2 default object permissions): app scope: read by every
    /// caller, write by any authenticated user; user scope: the user; group scope: the members; and the creator.
    func defaultACL(_ b: KiiStoreBucket) -> ACL {
        var acl = ACL()
        switch b.scope {
        case .app:
            acl[.everyone] = .read
            acl[.role(Self.authenticatedRole)] = .readWrite
        case .user(let id): acl[.user(id)] = .readWrite
        case .group(let id): acl[.group(id)] = .readWrite
        case .thing: break
        }
        if let creator = caller.userID { acl[.user(creator)] = .readWrite }
        if acl.entries.isEmpty { acl = Self.bookkeepingACL }
        return acl
    }

    func bucketExists(_ b: KiiStoreBucket) async -> Bool {
        (try? await owner.get(className: Self.bucketClass, id: b.storeClass)) != nil
    }

    func ensureBucket(_ b: KiiStoreBucket) async throws {
        if await bucketExists(b) { return }
        var fields: [String: Value] = ["bucket": .string(b.bucket)]
        switch b.scope {
        case .app: fields["scope"] = "APP"
        case .user(let id): fields["scope"] = "APP_AND_USER"; fields["owner"] = .string(id)
        case .group(let id): fields["scope"] = "APP_AND_GROUP"; fields["owner"] = .string(id)
        case .thing(let id): fields["scope"] = "APP_AND_THING"; fields["owner"] = .string(id)
        }
        do { _ = try await owner.create(Record(className: Self.bucketClass, id: b.storeClass, acl: Self.bookkeepingACL, fields: fields)) }
        catch let e as MBaaSError where e.kind == .duplicate {}
    }

    func bucketNotFound(_ b: KiiStoreBucket) -> KiiFailure {
        KiiFailure("BUCKET_NOT_FOUND", "The bucket \(b.bucket) was not found",
                   extras: ["bucketID": .string(b.bucket), "objectScope": b.objectScope(appID: appID)])
    }

    // MARK: Objects

    /// The data type a create's Content-Type names: `application/vnd.{appID}.{type}+json` [doc kii.md §3.2].
    func dataType() -> String? {
        guard let ct = request.headers["Content-Type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) else { return nil }
        let prefix = "application/vnd.\(appID)."
        guard ct.hasPrefix(prefix), ct.hasSuffix("+json") else { return nil }
        let type = String(ct.dropFirst(prefix.count).dropLast(5))
        return type.isEmpty ? nil : type
    }

    func contentType(dataType: String?) -> String {
        dataType.map { KiiObjectCodec.contentType(appID: appID, dataType: $0) } ?? "application/json"
    }

    /// The application fields of a body: keys starting with `_` are Kii's and are dropped [doc kii.md §3.4]; an
    /// object over the size limit is 400 `INVALID_INPUT_DATA`.
    func objectFields() throws -> [String: Value] {
        if let data = request.body, String(decoding: data, as: UTF8.self).count > dialect.configuration.maxObjectSize {
            throw KiiFailure("INVALID_INPUT_DATA", "An object has at most \(dialect.configuration.maxObjectSize) characters")
        }
        var fields: [String: Value] = [:]
        for (key, json) in try jsonBody() where !key.hasPrefix("_") {
            guard !key.isEmpty else { throw KiiFailure("INVALID_INPUT_DATA", "A field name is empty") }
            fields[key] = KiiObjectCodec.value(json)
        }
        return fields
    }

    /// A Kii object for a record: the application fields, then `_id`, `_created`, `_modified`, `_owner`,
    /// `_dataType`, `_version` ([doc] kii.md §3.4: a string on reads; [sdk] a number in query results).
    func render(_ record: Record, numericVersion: Bool = false) -> JSONObject {
        var o = JSONObject(sorting: record.fields.filter { !$0.key.hasPrefix("_") }.mapValues(KiiObjectCodec.kiiJSON))
        if let id = record.id { o["_id"] = .string(id) }
        if let c = record.createdAt { o["_created"] = .int(ISO8601.millis(c)) }
        if let m = record.updatedAt { o["_modified"] = .int(ISO8601.millis(m)) }
        if let ownerID = record.fields["_owner"]?.stringValue { o["_owner"] = .string(ownerID) }
        if let type = record.fields["_dataType"]?.stringValue { o["_dataType"] = .string(type) }
        if let v = record.version { o["_version"] = numericVersion ? (Int64(v).map(JSON.int) ?? .string(v)) : .string(v) }
        return o
    }

    func etag(_ record: Record) -> [(String, String)] {
        record.version.map { [("ETag", KiiETag.quote($0))] } ?? []
    }

    /// `If-Match` without quotes (kii.md §10), `nil` for none or `*`.
    var ifMatch: String? {
        guard let v = KiiETag.unquote(request.headers["If-Match"]), v != "*" else { return nil }
        return v
    }

    /// Runs a store call on one object and answers its failures as Kii does: a missing object is 404
    /// `OBJECT_NOT_FOUND`, one the caller may not reach 401 `UNAUTHORIZED`, a stale `If-Match` 409
    /// `OBJECT_VERSION_IS_STALE` [doc kii.md §3, §7].
    func onObject<T>(_ b: KiiStoreBucket, _ id: String, _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as MBaaSError {
            switch e.kind {
            case .notFound:
                if (try? await owner.get(className: b.storeClass, id: id)) != nil {
                    throw unauthorized("the caller may not access object \(id)")
                }
                throw objectNotFound(b, id)
            case .forbidden, .unauthorized: throw unauthorized("the caller may not change object \(id)")
            case .conflict:
                throw KiiFailure("OBJECT_VERSION_IS_STALE", "The object version is stale", extras: ["objectID": .string(id)])
            case .duplicate: throw KiiFailure("OBJECT_ALREADY_EXISTS", "The object already exists", extras: ["objectID": .string(id)])
            case .invalidRequest: throw KiiFailure("INVALID_INPUT_DATA", e.message)
            default: throw e
            }
        }
    }

    func objectNotFound(_ b: KiiStoreBucket, _ id: String) -> KiiFailure {
        KiiFailure("OBJECT_NOT_FOUND", "The object with specified id not found", extras: [
            "bucketID": .string(b.bucket), "objectID": .string(id), "objectScope": b.objectScope(appID: appID),
        ])
    }

    /// `POST {bucket}/objects` [doc kii.md §3.2]: 201 `{objectID, createdAt, dataType}`, `ETag`, `Location`.
    func create(_ address: KiiBucketAddress) async throws -> TransportResponse {
        let b = try await resolve(address)
        try await checkCanCreate(b)
        var fields = try objectFields()
        let type = dataType()
        if let creator = caller.userID { fields["_owner"] = .string(creator) }
        if let type { fields["_dataType"] = .string(type) }
        let record = try await onObject(b, "") {
            try await view.create(Record(className: b.storeClass, acl: defaultACL(b), fields: fields))
        }
        try await ensureBucket(b)
        let id = record.id ?? ""
        var out: JSONObject = ["objectID": .string(id), "createdAt": .int(ISO8601.millis(record.createdAt ?? dialect.clock()))]
        if type != nil { out["dataType"] = .string(contentType(dataType: type)) }
        return Self.json(201, .object(out), contentType: KiiObjectCreationResponse.contentType,
                         headers: etag(record) + [("Location", absoluteURL(KiiRoute.object(address, id: id).path(appID: appID)))])
    }

    /// `GET {bucket}/objects/{id}` [doc kii.md §3.4]: the object with `ETag` and its data type's Content-Type.
    func get(_ address: KiiBucketAddress, _ id: String) async throws -> TransportResponse {
        let b = try await resolve(address)
        let record = try await onObject(b, id) { try await readView(b).get(className: b.storeClass, id: id) }
        return Self.json(200, .object(render(record)), contentType: contentType(dataType: record.fields["_dataType"]?.stringValue),
                         headers: etag(record))
    }

    /// `PUT {bucket}/objects/{id}` [doc kii.md §3.3, §3.5]: creates (201 `{createdAt, modifiedAt}`) or replaces
    /// (200 `{modifiedAt}`); `If-None-Match: *` refuses an existing object, `If-Match` a stale one.
    func replace(_ address: KiiBucketAddress, _ id: String) async throws -> TransportResponse {
        guard KiiWire.isValidObjectID(id) else {
            throw KiiFailure("INVALID_OBJECT_ID", "An object id has 2-100 characters of A-Z a-z 0-9 - _ .")
        }
        let b = try await resolve(address)
        var fields = try objectFields()
        let type = dataType()
        guard let existing = try? await owner.get(className: b.storeClass, id: id) else {
            if ifMatch != nil { throw objectNotFound(b, id) }
            try await checkCanCreate(b)
            if let creator = caller.userID { fields["_owner"] = .string(creator) }
            if let type { fields["_dataType"] = .string(type) }
            let record = try await onObject(b, id) {
                try await view.create(Record(className: b.storeClass, id: id, acl: defaultACL(b), fields: fields))
            }
            try await ensureBucket(b)
            let created = ISO8601.millis(record.createdAt ?? dialect.clock())
            return Self.json(201, KiiObjectUpdateResponse(createdAt: created, modifiedAt: created).json,
                             contentType: KiiObjectUpdateResponse.contentType, headers: etag(record))
        }
        if request.headers["If-None-Match"]?.trimmingCharacters(in: .whitespaces) == "*" {
            throw KiiFailure("OBJECT_ALREADY_EXISTS", "The object already exists", extras: ["objectID": .string(id)])
        }
        var update = RecordUpdate(expectedVersion: ifMatch)
        for key in existing.fields.keys where !key.hasPrefix("_") && fields[key] == nil { update.changes[key] = .delete }
        for (key, value) in fields { update.changes[key] = .set(value) }
        if let type { update.changes["_dataType"] = .set(.string(type)) }
        let record = try await onObject(b, id) { try await view.update(className: b.storeClass, id: id, update) }
        return Self.json(200, KiiObjectUpdateResponse(modifiedAt: ISO8601.millis(record.updatedAt ?? dialect.clock())).json,
                         contentType: KiiObjectUpdateResponse.contentType, headers: etag(record))
    }

    /// `POST {bucket}/objects/{id}` with `X-HTTP-Method-Override: PATCH` [doc kii.md §3.6]: merges the keys and
    /// answers the whole object; never creates (404).
    func patch(_ address: KiiBucketAddress, _ id: String) async throws -> TransportResponse {
        let b = try await resolve(address)
        let fields = try objectFields()
        let record = try await onObject(b, id) {
            try await view.update(className: b.storeClass, id: id, RecordUpdate(changes: fields.mapValues(FieldOperation.set), expectedVersion: ifMatch))
        }
        return Self.json(200, .object(render(record)), contentType: contentType(dataType: record.fields["_dataType"]?.stringValue),
                         headers: etag(record))
    }

    /// `DELETE {bucket}/objects/{id}` [doc kii.md §3.7]: 204; `If-Match` checked. The body goes with the object.
    func delete(_ address: KiiBucketAddress, _ id: String) async throws -> TransportResponse {
        let b = try await resolve(address)
        try await onObject(b, id) { try await view.delete(className: b.storeClass, id: id, expectedVersion: ifMatch) }
        await dropBody(b, id)
        return Self.noContent()
    }

    // MARK: Buckets and queries

    /// `POST {bucket}/query` [doc kii.md §4]: a page of results with `nextPaginationKey` while more remain, or the
    /// COUNT aggregation; a bucket that never held an object is 404 `BUCKET_NOT_FOUND`.
    func query(_ address: KiiBucketAddress) async throws -> TransportResponse {
        let b = try await resolve(address)
        try await checkCanQuery(b)
        let body = try jsonBody()
        let kiiQuery = try KiiQueryRequest(json: .object(body))
        guard await bucketExists(b) else { throw bucketNotFound(b) }
        var query = try Self.translate(kiiQuery, className: b.storeClass, maxLimit: dialect.configuration.maxPageSize)
        let reader = readView(b)
        do {
            if !kiiQuery.aggregations.isEmpty {
                var out: [String: Int64] = [:]
                query.limit = nil
                query.cursor = nil
                for aggregation in kiiQuery.aggregations {
                    guard aggregation.type == "COUNT" else {
                        throw KiiFailure("QUERY_NOT_SUPPORTED", "Only the COUNT aggregation is supported")
                    }
                    out[aggregation.putAggregationInto] = Int64(try await reader.count(query))
                }
                return Self.json(200, KiiAggregationResponse(aggregations: out).json, contentType: "application/vnd.kii.QueryResponse+json")
            }
            let page = try await reader.queryPage(query)
            let answer = KiiQueryResponse(queryDescription: Self.describe(kiiQuery.clause),
                                          results: page.records.map { render($0, numericVersion: true) },
                                          nextPaginationKey: page.records.isEmpty ? nil : page.nextCursor)
            return Self.json(200, answer.json, contentType: "application/vnd.kii.QueryResponse+json")
        } catch let e as MBaaSError where e.kind == .unsupported || e.kind == .invalidRequest {
            throw KiiFailure("QUERY_NOT_SUPPORTED", e.message)
        }
    }

    /// The neutral query; what cannot be translated is 400 `QUERY_NOT_SUPPORTED` [doc kii.md §4.3].
    static func translate(_ request: KiiQueryRequest, className: String, maxLimit: Int) throws -> Query {
        do { return try KiiClauseTranslator.query(request, className: className, maxLimit: maxLimit) } catch {
            throw KiiFailure("QUERY_NOT_SUPPORTED", error.message)
        }
    }

    /// A `queryDescription` ([sdk] Unity fixture: `WHERE ( 1 = 1 )` for `all`).
    static func describe(_ clause: KiiClause) -> String {
        if case .all = clause { return "WHERE ( 1 = 1 )" }
        return "WHERE " + clause.json.printed()
    }

    /// `GET {bucket}` [sdk python3-kii `results/bucket.py`]: `{"bucketType":"rw","size":N}`.
    func bucketInfo(_ address: KiiBucketAddress) async throws -> TransportResponse {
        let b = try await resolve(address)
        try await checkCanQuery(b)
        guard await bucketExists(b) else { throw bucketNotFound(b) }
        let size = try await readView(b).count(Query(b.storeClass))
        return Self.json(200, .object(["bucketType": "rw", "size": .int(Int64(size))]),
                         contentType: "application/vnd.kii.BucketRetrievalResponse+json")
    }

    /// `DELETE {bucket}` [sdk Unity `TestKiiBucket.cs`]: 204, every object and body gone. Needs
    /// DROP_BUCKET_WITH_ALL_CONTENT: any authenticated user in app scope, the owner elsewhere [doc kii.md §6.2].
    func dropBucket(_ address: KiiBucketAddress) async throws -> TransportResponse {
        let b = try await resolve(address)
        if case .app = b.scope, caller != .anonymous {} else if !(await ownsScope(b)) {
            throw unauthorized("the caller may not drop bucket \(b.bucket)")
        }
        guard await bucketExists(b) else { throw bucketNotFound(b) }
        while true {
            let page = try await owner.queryPage(Query(b.storeClass, limit: 200))
            if page.records.isEmpty { break }
            for record in page.records {
                guard let id = record.id else { continue }
                try await owner.delete(className: b.storeClass, id: id, expectedVersion: nil)
                await dropBody(b, id)
            }
        }
        try await owner.delete(className: Self.bucketClass, id: b.storeClass, expectedVersion: nil)
        return Self.noContent()
    }
}
