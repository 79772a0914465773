import Foundation
import MBaaSCore
import MBaaSKiiWire

/// Object bodies (kii.md §5.1) and object ACLs (kii.md §6).
///
/// A body is a store file named `kiibody/{class}/{id}` (the store keeps the bytes under a random storage name, so
/// the name never reaches a disk path) with its object's ACL; it is not a field of the record, so uploading or
/// deleting it leaves the object's version alone, as Kii does ([sdk] Unity `TestKiiObject_body.cs`: the object's
/// ETag is unchanged after an upload). The body goes with its object (delete, drop bucket). Uploading again
/// replaces it. Range downloads, resumable uploads and publication are not emulated.
extension KiiCall {
    static func bodyName(_ b: KiiStoreBucket, _ id: String) -> String { "kiibody/\(b.storeClass)/\(id)" }

    /// Whether the caller may write an object, by its ACL ([doc] kii.md §5.1: "determined by the ACL set on the
    /// object"; writing a body needs WRITE_EXISTING_OBJECT [inferred]).
    func mayWrite(_ record: Record) async -> Bool {
        switch caller {
        case .admin: return true
        case .anonymous: return record.acl?.canWrite(user: nil) ?? true
        case .user(let id, _):
            guard let user = try? await owner.user(id: id) else { return false }
            return record.acl?.canWrite(user: id, roles: user.roles, groups: user.groups) ?? true
        }
    }

    /// The body's file, or 404 `OBJECT_BODY_NOT_FOUND` [doc kii.md §5.1].
    func bodyInfo(_ b: KiiStoreBucket, _ id: String) async throws -> FileInfo {
        let name = Self.bodyName(b, id)
        guard let info = try await owner.listFiles(prefix: name, limit: 1000).first(where: { $0.reference.name == name }) else {
            throw KiiFailure("OBJECT_BODY_NOT_FOUND", "The object body was not found",
                             extras: ["bucketID": .string(b.bucket), "objectID": .string(id), "objectScope": b.objectScope(appID: appID)])
        }
        return info
    }

    /// A body's ETag: its last change, in milliseconds (a body version of its own, kii.md §5.1).
    func bodyETag(_ info: FileInfo) -> String {
        KiiETag.quote(String(ISO8601.millis(info.updatedAt ?? info.createdAt ?? dialect.clock())))
    }

    /// `PUT {object}/body` [doc kii.md §5.1; sdk Unity `TestKiiObject_body.cs`]: 200 `{"modifiedAt"}` and the
    /// body's `ETag`.
    func putBody(_ address: KiiBucketAddress, _ id: String) async throws -> TransportResponse {
        let b = try await resolve(address)
        let data = request.body ?? Data()
        guard data.count <= dialect.configuration.maxBodySize else {
            throw KiiFailure("REQUEST_ENTITY_TOO_LARGE", "An object body has at most \(dialect.configuration.maxBodySize) bytes")
        }
        let record = try await onObject(b, id) { try await readView(b).get(className: b.storeClass, id: id) }
        guard await mayWrite(record) else { throw unauthorized("the caller may not write object \(id)") }
        let contentType = request.headers["Content-Type"].flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
        let name = Self.bodyName(b, id)
        try? await owner.deleteFile(FileReference(name: name))
        _ = try await owner.upload(FileUpload(name: name, source: .data(data), contentType: contentType,
                                              acl: record.acl ?? Self.bookkeepingACL))
        let info = try await bodyInfo(b, id)
        return Self.json(200, KiiObjectUpdateResponse(modifiedAt: ISO8601.millis(info.updatedAt ?? dialect.clock())).json,
                         contentType: KiiObjectUpdateResponse.contentType, headers: [("ETag", bodyETag(info))])
    }

    /// `GET {object}/body`: 200 with the uploader's Content-Type; `HEAD`: 204 with the headers only [doc kii.md §5.1].
    func getBody(_ address: KiiBucketAddress, _ id: String, head: Bool) async throws -> TransportResponse {
        let b = try await resolve(address)
        _ = try await onObject(b, id) { try await readView(b).get(className: b.storeClass, id: id) }
        let info = try await bodyInfo(b, id)
        let headers = HTTPFields([("Content-Type", info.reference.contentType ?? "application/octet-stream"), ("ETag", bodyETag(info))])
        if head { return TransportResponse(status: 204, headers: headers) }
        return TransportResponse(status: 200, headers: headers, body: try await owner.download(info.reference))
    }

    /// `DELETE {object}/body` [sdk Unity `TestKiiObject.cs`]: 204; needs write access to the object.
    func deleteBody(_ address: KiiBucketAddress, _ id: String) async throws -> TransportResponse {
        let b = try await resolve(address)
        let record = try await onObject(b, id) { try await readView(b).get(className: b.storeClass, id: id) }
        guard await mayWrite(record) else { throw unauthorized("the caller may not write object \(id)") }
        let info = try await bodyInfo(b, id)
        try await owner.deleteFile(info.reference)
        return Self.noContent()
    }

    /// Removes an object's body (with the object).
    func dropBody(_ b: KiiStoreBucket, _ id: String) async {
        try? await owner.deleteFile(FileReference(name: Self.bodyName(b, id)))
    }

    // MARK: ACLs

    /// The store principal of a Kii subject: `UserID:ANY_AUTHENTICATED_USER` is the role every user holds,
    /// `UserID:ANONYMOUS_USER` every caller [inferred: the store has no anonymous-only principal].
    func principal(_ subject: KiiACLSubject) throws -> ACL.Principal {
        switch subject {
        case .user(let id): .user(id)
        case .group(let id): .group(id)
        case .anyAuthenticatedUser: .role(Self.authenticatedRole)
        case .anonymousUser: .everyone
        case .thing: throw KiiFailure("INVALID_INPUT_DATA", "Things are not emulated")
        }
    }

    func subject(_ principal: ACL.Principal) -> KiiACLSubject? {
        switch principal {
        case .user(let id): .user(id)
        case .group(let id): .group(id)
        case .role(let name) where name == Self.authenticatedRole: .anyAuthenticatedUser
        case .role: nil
        case .everyone: .anonymousUser
        }
    }

    /// The Kii object ACL of a store ACL.
    func objectEntries(_ acl: ACL?) -> Set<KiiACLEntry> {
        var out: Set<KiiACLEntry> = []
        for (principal, access) in acl?.entries ?? [:] {
            guard let s = subject(principal) else { continue }
            if access.read { out.insert(KiiACLEntry(.readExistingObject, s)) }
            if access.write { out.insert(KiiACLEntry(.writeExistingObject, s)) }
        }
        return out
    }

    /// A bucket's ACL: the scope's default, which the emulator does not let anyone change [doc kii.md §6.2].
    func bucketEntries(_ b: KiiStoreBucket) -> Set<KiiACLEntry> {
        let subjects: [KiiACLSubject]
        switch b.scope {
        case .app:
            return [KiiACLEntry(.createObjectsInBucket, .anyAuthenticatedUser),
                    KiiACLEntry(.queryObjectsInBucket, .anyAuthenticatedUser), KiiACLEntry(.queryObjectsInBucket, .anonymousUser),
                    KiiACLEntry(.readObjectsInBucket, .anyAuthenticatedUser), KiiACLEntry(.readObjectsInBucket, .anonymousUser),
                    KiiACLEntry(.dropBucketWithAllContent, .anyAuthenticatedUser)]
        case .user(let id): subjects = [.user(id)]
        case .group(let id): subjects = [.group(id)]
        case .thing(let id): subjects = [.thing(id)]
        }
        return Set(KiiACLVerb.bucketVerbs.flatMap { verb in subjects.map { KiiACLEntry(verb, $0) } })
    }

    /// Whether the caller may read or change an object's ACL: its creator, the scope owner, the admin [doc kii.md §6.2].
    func mayManageACL(_ record: Record, _ b: KiiStoreBucket) async -> Bool {
        if let me = caller.userID, record.fields["_owner"]?.stringValue == me { return true }
        if case .app = b.scope { return caller == .admin }
        return await ownsScope(b)
    }

    /// `GET {resource}/acl[/{VERB}]` [doc kii.md §6.1]: the ACL list, or one verb's subjects.
    func listACL(_ resource: KiiACLResource, verb: KiiACLVerb?) async throws -> TransportResponse {
        let b = try await resolve(resource.bucket)
        let entries: Set<KiiACLEntry>
        switch resource {
        case .bucket:
            if case .app = b.scope {} else if !(await ownsScope(b)) { throw unauthorized("the caller may not read this ACL") }
            entries = bucketEntries(b)
        case .object(_, let id):
            guard let record = try? await owner.get(className: b.storeClass, id: id) else { throw objectNotFound(b, id) }
            guard await mayManageACL(record, b) else { throw unauthorized("the caller may not read this ACL") }
            entries = objectEntries(record.acl)
        }
        if let verb {
            let subjects = entries.filter { $0.verb == verb }.map(\.subject).sorted().map(\.json)
            return Self.json(200, .array(subjects), contentType: "application/vnd.kii.ACLVerbRetrievalResponse+json")
        }
        return Self.json(200, KiiACLList(entries).json, contentType: KiiACLList.contentType)
    }

    /// `PUT` (grant) / `DELETE` (revoke) `{object}/acl/{VERB}/{SUBJECT}` [doc kii.md §6.1]: 204 [inferred: the
    /// SDKs accept any 2xx]; an entry already there is 409 `ACL_ALREADY_EXISTS`, a missing one 404 `ACL_NOT_FOUND`.
    /// Bucket ACLs cannot be changed here (403 `OPERATION_NOT_SUPPORTED`).
    func changeACL(_ resource: KiiACLResource, _ verb: KiiACLVerb, _ subject: KiiACLSubject, grant: Bool) async throws -> TransportResponse {
        let b = try await resolve(resource.bucket)
        guard case .object(_, let id) = resource else {
            throw KiiFailure("OPERATION_NOT_SUPPORTED", "The emulator keeps every bucket's default ACL")
        }
        guard KiiACLVerb.objectVerbs.contains(verb) else { throw KiiFailure("INVALID_INPUT_DATA", "\(verb.rawValue) is not an object verb") }
        guard let record = try? await owner.get(className: b.storeClass, id: id) else { throw objectNotFound(b, id) }
        guard await mayManageACL(record, b) else { throw unauthorized("the caller may not change this ACL") }
        let p = try principal(subject)
        var acl = record.acl ?? ACL()
        acl[.role("KII_EMULATOR_BOOKKEEPING")] = ACL.Access()
        var access = acl[p]
        let had = verb == .readExistingObject ? access.read : access.write
        if grant && had { throw KiiFailure("ACL_ALREADY_EXISTS", "The ACL entry already exists") }
        if !grant && !had { throw KiiFailure("ACL_NOT_FOUND", "The ACL entry was not found") }
        if verb == .readExistingObject { access.read = grant } else { access.write = grant }
        acl[p] = access
        if acl.entries.isEmpty { acl = Self.bookkeepingACL }  // only the admin reaches it now
        _ = try await owner.update(className: b.storeClass, id: id, RecordUpdate(acl: acl))
        _ = try? await owner.repairFileACL(name: Self.bodyName(b, id), acl: acl)
        return Self.noContent()
    }
}
